package hf

import (
	"fmt"
	"math"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// gemmaFamily is what sets Gemma2ForCausalLM and Gemma3ForCausalLM apart:
// one block (RMSNorms scaling by 1 + w before and after each sublayer,
// rotary attention with grouped-query heads and queries scaled by
// query_pre_attn_scalar^-0.5, a GeGLU MLP), embeddings times sqrt(hidden)
// and a tied head, with each config class's defaults.
type gemmaFamily struct {
	vocab, positions int
	// attnCap and finalCap are the soft-caps when config.json leaves them
	// out (Gemma 2's 50 and 30; Gemma 3 has none).
	attnCap, finalCap float64
	// pattern is every how many layers one attends to every earlier token
	// when layer_types is absent: Gemma 2's fixed 2 (layer i slides when
	// (i + 1) % 2), Gemma 3's sliding_window_pattern, 6 by default.
	pattern    int
	patternKey bool
	// gemma3: q_norm and k_norm on each head, and the sliding layers'
	// own rotary base (rope_local_base_freq).
	gemma3 bool
}

var (
	gemma2Defaults = gemmaFamily{vocab: 256000, positions: 8192, attnCap: 50, finalCap: 30, pattern: 2}
	gemma3Defaults = gemmaFamily{vocab: 262208, positions: 131072, pattern: 6, patternKey: true, gemma3: true}
)

// config maps the config.json of a model of the family to a model.Config.
func (f gemmaFamily) config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, NormOffset: true, NormPlacement: model.PlacementSandwich,
		Activation: model.ActivationGeGLU, MLPBias: model.FlagOff, Position: model.PositionRope, QKNorm: f.gemma3}
	var err error
	if err := readSizes(keys, &cfg, f.vocab, 2304, 9216, 26, 8, f.positions); err != nil {
		return model.Config{}, err
	}
	if err := headShape(keys, &cfg, 256, 4); err != nil {
		return model.Config{}, err
	}
	if err := gemmaActivation(keys); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = llamaEps(keys); err != nil {
		return model.Config{}, err
	}
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", true); err != nil {
		return model.Config{}, err
	}
	if cfg.QKVBias, cfg.OutBias, _, err = attentionBiases(keys); err != nil {
		return model.Config{}, err
	}
	if err := f.scores(keys, &cfg); err != nil {
		return model.Config{}, err
	}
	sliding, err := f.windows(keys, &cfg)
	if err != nil {
		return model.Config{}, err
	}
	if err := f.rope(keys, &cfg, sliding); err != nil {
		return model.Config{}, err
	}
	// sqrt(hidden_size) in float32; Load rounds it to the dtype of the
	// file's embedding, the model's.
	cfg.EmbedScale = inDType(math.Sqrt(float64(cfg.DModel)), "F32")
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// gemmaActivation refuses an MLP activation other than the tanh GELU
// GeGLU is built with. Gemma's MLP reads hidden_activation; the
// hidden_act its files also carry is not used.
func gemmaActivation(keys configKeys) error {
	act, err := keys.str("hidden_activation", "gelu_pytorch_tanh")
	if err != nil {
		return err
	}
	if gpt2Activations[act] != model.ActivationGELUTanh {
		return errors.Errorf("hidden_activation = %s: not supported; supported: gelu_fast, gelu_new, gelu_pytorch_tanh", msg.Quote(act))
	}
	return nil
}

// scores reads what Gemma does to the attention scores and the logits:
// the query scale query_pre_attn_scalar^-0.5 (0, the default
// 1/sqrt(head_dim), when the scalar is head_dim), and the soft-caps
// (null for none). A bidirectional model is refused.
func (f gemmaFamily) scores(keys configKeys, cfg *model.Config) error {
	scalar, err := keys.number("query_pre_attn_scalar", 256)
	if err != nil {
		return err
	}
	if !(scalar > 0) {
		return keys.wrongValue("query_pre_attn_scalar", "a number > 0")
	}
	if scalar != float64(cfg.DHead()) {
		cfg.AttnScale = math.Pow(scalar, -0.5)
	}
	if cfg.AttnSoftcap, err = softcap(keys, "attn_logit_softcapping", f.attnCap); err != nil {
		return err
	}
	if cfg.FinalSoftcap, err = softcap(keys, "final_logit_softcapping", f.finalCap); err != nil {
		return err
	}
	bidirectional, err := keys.boolean("use_bidirectional_attention", false)
	if err == nil && bidirectional {
		err = errors.New("use_bidirectional_attention = true: not supported; the model's attention is causal")
	}
	return err
}

// softcap is key's cap, a number > 0 (transformers divides by it), def
// when absent, 0 (none) when null.
func softcap(keys configKeys, key string, def float64) (float64, error) {
	switch {
	case keys.null(key):
		return 0, nil
	case !keys.present(key):
		return def, nil
	}
	v, err := keys.number(key, 0)
	if err == nil && !(v > 0) {
		err = keys.wrongValue(key, "a number > 0, or null for none")
	}
	return v, err
}

// windows sets cfg's window (sliding_window, 4096 when absent, none when
// null) on the sliding layers, the others global, and says which slide.
func (f gemmaFamily) windows(keys configKeys, cfg *model.Config) ([]bool, error) {
	width, err := keys.sizeOrNull("sliding_window", 4096)
	if err != nil {
		return nil, err
	}
	pattern := f.pattern
	if f.patternKey && !keys.present("layer_types") {
		if pattern, err = keys.size("sliding_window_pattern", pattern); err != nil {
			return nil, err
		}
	}
	sliding, err := slidingLayers(keys, cfg.Layers, func(i int) bool { return (i+1)%pattern != 0 })
	if err != nil {
		return nil, err
	}
	cfg.Window, cfg.GlobalLayers = layerWindows(sliding, width)
	return sliding, nil
}

// rope sets cfg's rotary positions: Gemma 2's the same on every layer,
// Gemma 3's sliding layers their own unscaled base.
func (f gemmaFamily) rope(keys configKeys, cfg *model.Config, sliding []bool) error {
	if !f.gemma3 {
		r, err := readRope(keys, 10000)
		r.apply(cfg)
		return err
	}
	global, local, err := gemma3Rope(keys)
	if err != nil {
		return err
	}
	switch n := count(sliding); {
	case n == 0:
		global.apply(cfg)
	case n == len(sliding):
		local.apply(cfg)
	case global.theta == local.theta && global.scaling == "":
		global.apply(cfg)
	case cfg.Window == 0:
		return errors.New("sliding_window = null: the sliding_attention layers' own rotary positions are built only with a window")
	default:
		global.apply(cfg)
		cfg.LocalRopeBase = local.theta
	}
	return nil
}

// gemma3Rope are Gemma 3's rotary parameters of its global and its
// sliding layers, in either of the forms transformers writes: rope_theta
// (default 1e6) beside rope_scaling, which scales the global layers only,
// and rope_local_base_freq (default 1e4); or since transformers 5 a
// rope_parameters dict per layer type. The sliding layers' are unscaled.
func gemma3Rope(keys configKeys) (global, local rotary, err error) {
	params, err := keys.dict("rope_parameters")
	if err != nil {
		return rotary{}, rotary{}, err
	}
	if !perLayerType(params) {
		if global, err = readRope(keys, 1e6); err != nil {
			return rotary{}, rotary{}, err
		}
		theta, err := keys.number("rope_local_base_freq", 1e4)
		if err != nil {
			return rotary{}, rotary{}, err
		}
		local = rotary{theta: theta, thetaKey: "rope_local_base_freq"}
		return global, local, local.checkTheta()
	}
	if global, local, err = ropePerLayerType(keys, params); err != nil {
		return rotary{}, rotary{}, err
	}
	if local.scaling != "" {
		return rotary{}, rotary{}, errors.Errorf("rope_parameters.%s.rope_type = %s: not built; the sliding layers' rotary positions are unscaled",
			slidingAttention, msg.Quote(local.scaling))
	}
	return global, local, nil
}

// ropePerLayerType reads transformers 5's rope_parameters of Gemma 3, a
// dict per layer type, each over rope_theta (the global layers', default
// 1e6) or rope_local_base_freq (the sliding layers', 1e4); a rope_scaling
// beside it scales the global layers.
func ropePerLayerType(keys, params configKeys) (global, local rotary, err error) {
	for name := range params {
		if name != fullAttention && name != slidingAttention {
			return rotary{}, rotary{}, errors.Errorf("rope_parameters.%s: not a layer type; want %s or %s", msg.Clean(name), fullAttention, slidingAttention)
		}
	}
	if err := checkFullRotary("", keys); err != nil {
		return rotary{}, rotary{}, err
	}
	if global.theta, err = keys.number("rope_theta", 1e6); err != nil {
		return rotary{}, rotary{}, err
	}
	if local.theta, err = keys.number("rope_local_base_freq", 1e4); err != nil {
		return rotary{}, rotary{}, err
	}
	local.thetaKey = "rope_local_base_freq"
	scaling, err := keys.dict("rope_scaling")
	if err == nil {
		err = notPerLayerType("rope_scaling", scaling)
	}
	if err == nil {
		global, err = global.read("rope_scaling", scaling)
	}
	for _, t := range []struct {
		name string
		r    *rotary
	}{{fullAttention, &global}, {slidingAttention, &local}} {
		if err != nil {
			break
		}
		var dict configKeys
		if dict, err = params.dict(t.name); err != nil {
			err = errors.WithMessage(err, "rope_parameters")
			break
		}
		*t.r, err = t.r.read("rope_parameters."+t.name, dict)
	}
	if err != nil {
		return rotary{}, rotary{}, err
	}
	if err := global.checkTheta(); err != nil {
		return rotary{}, rotary{}, err
	}
	return global, local, local.checkTheta()
}

// gemmaTensors lists the names a file of the family may hold: Llama's,
// with a norm after each sublayer as well as before it (the project's
// sandwich ln1, ln1_post, ln2, ln2_post), and no rotary buffers.
func gemmaTensors(cfg model.Config) map[string]target {
	names := llamaTensors(cfg)
	for i := range cfg.Layers {
		hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
		delete(names, hf+"self_attn.rotary_emb.inv_freq")
		names[hf+"post_attention_layernorm.weight"] = target{param: own + "ln1_post.weight"}
		names[hf+"pre_feedforward_layernorm.weight"] = target{param: own + "ln2.weight"}
		names[hf+"post_feedforward_layernorm.weight"] = target{param: own + "ln2_post.weight"}
	}
	return names
}

// significantBits are the bits of precision of each float dtype a file
// stores, the implicit leading bit included.
var significantBits = map[string]int{"F32": 24, "F16": 11, "BF16": 8}

// inDType is x as the float32 PyTorch holds it, rounded (to nearest, ties
// to even) to dtype: the value a constant of the model takes in the
// model's dtype, as transformers computes Gemma's embedding normaliser.
// x is a normal number of every dtype (sqrt(hidden_size) is).
func inDType(x float64, dtype string) float64 {
	frac, exp := math.Frexp(float64(float32(x))) // frac in [0.5, 1)
	scale := math.Ldexp(1, significantBits[dtype])
	return math.Ldexp(math.RoundToEven(frac*scale)/scale, exp)
}
