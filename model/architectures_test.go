package model

// architectureVariants put the parts of each architecture the lab opens
// together, at tiny sizes, for the reference oracle: the parts are each
// tested alone elsewhere, and these hold their combinations (a head width
// apart from D/H under sandwich norms and soft-caps, a local rope base with
// QK-norm by (1 + w), QK-norm over a head_dim-wide projection) on both
// paths, in the decoder and in the reference.
func architectureVariants() map[string]Config {
	base := Config{Vocab: 11, Context: 9, DModel: 12, Heads: 2, Layers: 2, MLP: true, DFF: 16}
	gemma2 := base
	gemma2.Norm, gemma2.NormOffset, gemma2.NormPlacement, gemma2.Activation, gemma2.MLPBias = NormRMS, true, PlacementSandwich, ActivationGeGLU, FlagOff
	gemma2.Position, gemma2.KVHeads, gemma2.HeadDim, gemma2.TieEmbeddings = PositionRope, 1, 8, true
	gemma2.AttnScale, gemma2.AttnSoftcap, gemma2.FinalSoftcap, gemma2.EmbedScale = 0.3, 2, 3, 3.5
	gemma2.Window, gemma2.GlobalLayers = 3, NewLayerList(1)

	gemma3 := gemma2
	gemma3.Layers, gemma3.QKNorm, gemma3.AttnSoftcap, gemma3.FinalSoftcap = 3, true, 0, 0
	gemma3.GlobalLayers, gemma3.RopeBase, gemma3.LocalRopeBase = NewLayerList(2), 1000, 10
	gemma3.RopeScaling, gemma3.RopeFactor = RopeScalingLinear, 2

	olmo2 := base
	olmo2.Heads, olmo2.KVHeads, olmo2.HeadDim, olmo2.Position = 4, 2, 4, PositionRope
	olmo2.Norm, olmo2.NormPlacement, olmo2.QKNorm, olmo2.QKNormScope = NormRMS, PlacementPost, true, QKScopeAll
	olmo2.Activation, olmo2.MLPBias = ActivationSwiGLU, FlagOff

	pythia := base
	pythia.Heads, pythia.Position, pythia.RotaryDimsKey, pythia.ParallelResidual = 3, PositionRope, 2, true
	pythia.Activation, pythia.QKVBias, pythia.OutBias = ActivationGELU, true, true

	gptNeo := base
	gptNeo.AttnScale, gptNeo.Window, gptNeo.GlobalLayers, gptNeo.OutBias, gptNeo.TieEmbeddings = 1, 3, NewLayerList(0), true, true

	llama3 := base
	llama3.Norm, llama3.Activation, llama3.MLPBias, llama3.Position, llama3.KVHeads = NormRMS, ActivationSwiGLU, FlagOff, PositionRope, 1
	llama3.RopeScaling, llama3.RopeFactor, llama3.RopeLowFreqFactor, llama3.RopeHighFreqFactor, llama3.RopeOriginalContext = RopeScalingLlama3, 8, 1, 4, 16
	llama3.RopeBase, llama3.HeadDim, llama3.RotaryDimsKey = 500, 8, 4
	return map[string]Config{
		"arch gemma2": gemma2, "arch gemma3": gemma3, "arch olmo2": olmo2,
		"arch pythia": pythia, "arch gpt-neo": gptNeo, "arch llama3 partial": llama3,
	}
}
