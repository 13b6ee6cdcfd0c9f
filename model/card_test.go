package model

import (
	"math"
	"testing"
)

// cardConfigs are whole configs of the architectures issue 45 opens, at
// their published sizes (config.json as open/hf reads it), for the model
// card's words.
func cardConfigs() map[string]Config {
	return map[string]Config{
		"Gemma 2 2B": {Vocab: 256000, Context: 8192, DModel: 2304, Heads: 8, KVHeads: 4, HeadDim: 256, Layers: 26, MLP: true, DFF: 9216,
			Norm: NormRMS, NormEps: 1e-6, NormOffset: true, NormPlacement: PlacementSandwich, Activation: ActivationGeGLU, MLPBias: FlagOff,
			Position: PositionRope, Window: 4096, GlobalLayers: NewLayerList(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25),
			AttnSoftcap: 50, FinalSoftcap: 30, EmbedScale: 48, TieEmbeddings: true},
		"Gemma 2 27B": {Vocab: 256000, Context: 8192, DModel: 4608, Heads: 32, KVHeads: 16, HeadDim: 128, Layers: 4, MLP: true, DFF: 36864,
			Norm: NormRMS, NormEps: 1e-6, NormOffset: true, NormPlacement: PlacementSandwich, Activation: ActivationGeGLU, MLPBias: FlagOff,
			Position: PositionRope, Window: 4096, GlobalLayers: NewLayerList(1, 3), AttnScale: 1 / math.Sqrt(144),
			AttnSoftcap: 50, FinalSoftcap: 30, EmbedScale: 68, TieEmbeddings: true},
		"Gemma 3 1B": {Vocab: 262144, Context: 32768, DModel: 1152, Heads: 4, KVHeads: 1, HeadDim: 256, Layers: 26, MLP: true, DFF: 6912,
			Norm: NormRMS, NormEps: 1e-6, NormOffset: true, NormPlacement: PlacementSandwich, Activation: ActivationGeGLU, MLPBias: FlagOff,
			QKNorm: true, Position: PositionRope, RopeBase: 1e6, LocalRopeBase: 1e4, Window: 512, GlobalLayers: NewLayerList(5, 11, 17, 23),
			EmbedScale: 34, TieEmbeddings: true},
		"Pythia 160M": {Vocab: 50304, Context: 2048, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072, QKVBias: true, OutBias: true, LMBias: false,
			NormEps: 1e-5, Activation: ActivationGELU, Position: PositionRope, RotaryDimsKey: 16, ParallelResidual: true},
		"OLMo 2 1B": {Vocab: 100352, Context: 4096, DModel: 2048, Heads: 16, Layers: 16, MLP: true, DFF: 8192,
			Norm: NormRMS, NormEps: 1e-6, NormPlacement: PlacementPost, Activation: ActivationSwiGLU, MLPBias: FlagOff,
			QKNorm: true, QKNormScope: QKScopeAll, Position: PositionRope, RopeBase: 500000},
		"Llama 3.2 1B": {Vocab: 128256, Context: 131072, DModel: 2048, Heads: 32, KVHeads: 8, Layers: 16, MLP: true, DFF: 8192,
			Norm: NormRMS, NormEps: 1e-5, Activation: ActivationSwiGLU, MLPBias: FlagOff, Position: PositionRope, RopeBase: 500000,
			RopeScaling: RopeScalingLlama3, RopeFactor: 32, RopeLowFreqFactor: 1, RopeHighFreqFactor: 4, RopeOriginalContext: 8192, TieEmbeddings: true},
		"Qwen 3 0.6B": {Vocab: 151936, Context: 40960, DModel: 1024, Heads: 16, KVHeads: 8, HeadDim: 128, Layers: 28, MLP: true, DFF: 3072,
			Norm: NormRMS, NormEps: 1e-6, Activation: ActivationSwiGLU, MLPBias: FlagOff, QKNorm: true, Position: PositionRope, RopeBase: 1e6, TieEmbeddings: true},
		"Phi-3 mini 4k": {Vocab: 32064, Context: 4096, DModel: 3072, Heads: 32, Layers: 32, MLP: true, DFF: 8192,
			Norm: NormRMS, NormEps: 1e-5, Activation: ActivationSwiGLU, MLPBias: FlagOff, Position: PositionRope, Window: 2047},
		"TinyStories 33M": {Vocab: 50257, Context: 2048, DModel: 768, Heads: 16, Layers: 4, MLP: true, DFF: 3072, OutBias: true,
			Position: PositionLearned, Window: 256, GlobalLayers: NewLayerList(0, 2), AttnScale: 1, TieEmbeddings: true},
	}
}

// TestArchitectureCards: the model card of each architecture names its
// parts in words (the blocks, then the attention), each key once, values
// that are the default left out, and the global layers said as a pattern.
func TestArchitectureCards(t *testing.T) {
	want := map[string][2]string{
		"Gemma 2 2B": {"blocks with MLP and sandwich norms (RMSNorm (1 + w), norm eps 1e-06, GeGLU, no MLP biases), tied embeddings, embeddings scaled by 48, soft-capped logits at 30",
			"rope positions (base 10000), 4 kv heads (grouped-query), head_dim 256, local/global 1:1 with window 4096 (every 2nd layer global from 1), attention soft-cap 50"},
		"Gemma 2 27B": {"blocks with MLP and sandwich norms (RMSNorm (1 + w), norm eps 1e-06, GeGLU, no MLP biases), tied embeddings, embeddings scaled by 68, soft-capped logits at 30",
			"rope positions (base 10000), 16 kv heads (grouped-query), head_dim 128, local/global 1:1 with window 4096 (layers 1 and 3 global), attention scale 1/12, attention soft-cap 50"},
		"Gemma 3 1B": {"blocks with MLP and sandwich norms (RMSNorm (1 + w), norm eps 1e-06, GeGLU, no MLP biases), QK-norm, tied embeddings, embeddings scaled by 34",
			"rope positions (base 1000000 global, 10000 local), 1 kv head (multi-query), head_dim 256, local/global 5:1 with window 512 (every 6th layer global from 5)"},
		"Pythia 160M": {"pre-LN blocks with MLP (norm eps 1e-05, exact GELU), parallel residual",
			"rope positions (base 10000), rotary on 16 of 64 channels"},
		"OLMo 2 1B": {"post-norm blocks with MLP (RMSNorm, norm eps 1e-06, SwiGLU, no MLP biases), QK-norm over the projection",
			"rope positions (base 500000)"},
		"Llama 3.2 1B": {"pre-RMSNorm blocks with MLP (norm eps 1e-05, SwiGLU, no MLP biases), tied embeddings",
			"rope positions (base 500000), llama3 rope scaling x32, 8 kv heads (grouped-query)"},
		"Qwen 3 0.6B": {"pre-RMSNorm blocks with MLP (norm eps 1e-06, SwiGLU, no MLP biases), QK-norm, tied embeddings",
			"rope positions (base 1000000), 8 kv heads (grouped-query), head_dim 128"},
		"Phi-3 mini 4k": {"pre-RMSNorm blocks with MLP (norm eps 1e-05, SwiGLU, no MLP biases)",
			"rope positions (base 10000), window 2047"},
		"TinyStories 33M": {"pre-LN blocks with MLP, tied embeddings",
			"local/global 1:1 with window 256 (layers 0 and 2 global), unscaled attention"},
	}
	for name, c := range cardConfigs() {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if got := [2]string{c.Blocks(), c.Family()}; got != want[name] {
			t.Errorf("%s:\nBlocks() %q\nFamily() %q\nwant\n         %q\n         %q", name, got[0], got[1], want[name][0], want[name][1])
		}
	}
}

// TestCardLayerLists: one or two global layers are named, three or more
// evenly spaced said as a pattern, others listed; the ratio is the
// pattern's when three or more recur evenly; the query scale is said as
// a power -0.5 of a whole number where it is one, and not at all where it
// is the default.
func TestCardLayerLists(t *testing.T) {
	for _, c := range []struct {
		layers int
		global []int
		want   string
	}{
		{6, []int{5}, "local/global 5:1 with window 4 (layer 5 global)"},
		{62, []int{5, 11, 17, 23, 29, 35, 41, 47, 53, 59}, "local/global 5:1 with window 4 (every 6th layer global from 5)"},
		{8, []int{0, 1, 3, 6, 7}, "local/global 3:5 with window 4 (layers 0, 1, 3, 6, 7 global)"},
		{8, []int{0, 1, 3}, "local/global 5:3 with window 4 (layers 0, 1, 3 global)"},
		{8, []int{3, 4, 5}, "local/global 5:3 with window 4 (layers 3-5 global)"},
	} {
		cfg := Config{Vocab: 5, Context: 4, DModel: 8, Heads: 2, Layers: c.layers, Window: 4, GlobalLayers: NewLayerList(c.global...)}
		if got := cfg.Family(); got != c.want {
			t.Errorf("%d layers, global %v: Family() = %q, want %q", c.layers, c.global, got, c.want)
		}
	}
	for scale, want := range map[float64]string{1: "unscaled attention", 0.4: "attention scale 0.4", 1 / math.Sqrt(144): "attention scale 1/12", 1 / math.Sqrt(200): "attention scale 1/sqrt(200)", 0.25: "", 0.25 + 1e-9: ""} {
		cfg := Config{Vocab: 5, Context: 4, DModel: 32, Heads: 2, Layers: 1, AttnScale: scale} // head width 16: 0.25 is the default
		if got := cfg.Family(); got != want {
			t.Errorf("attn_scale %v: Family() = %q, want %q", scale, got, want)
		}
	}
}
