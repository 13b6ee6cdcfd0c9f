package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// phi3Config maps a Phi3ForCausalLM's config.json to a model.Config, with
// Phi3Config's defaults for absent keys: Llama's block (RMSNorm, SwiGLU,
// rotary grouped-query attention, no biases) with head_dim read apart from
// hidden/heads, rotary positions on partial_rotary_factor of each head's
// channels (1), sliding_window keys on every layer (None: all), and an
// untied head.
func phi3Config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, Position: model.PositionRope, MLPBias: model.FlagOff}
	if err := llamaShaped(keys, &cfg, 32064, 3072, 8192, 32, 32, 4096); err != nil {
		return model.Config{}, err
	}
	if err := phi3RopeType(keys); err != nil {
		return model.Config{}, err
	}
	var err error
	if err = partialRope(keys, "partial_rotary_factor", 1, "", &cfg); err != nil {
		return model.Config{}, err
	}
	if cfg.Window, err = keys.sizeOrNull("sliding_window", 0); err != nil {
		return model.Config{}, err
	}
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", false); err != nil {
		return model.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// llamaShaped reads what Phi-3's and OLMo 2's configs share with Llama's,
// with the class's defaults: the sizes, the head width (head_dim, else
// hidden/heads) and key/value heads (None: the heads), SiLU (the one
// activation SwiGLU is built with), and rms_norm_eps (1e-5).
func llamaShaped(keys configKeys, cfg *model.Config, vocab, hidden, intermediate, layers, heads, positions int) error {
	if err := readSizes(keys, cfg, vocab, hidden, intermediate, layers, heads, positions); err != nil {
		return err
	}
	if err := headShape(keys, cfg, 0, 0); err != nil {
		return err
	}
	if err := llamaActivation(keys); err != nil {
		return err
	}
	var err error
	cfg.NormEps, err = normEps(keys, "rms_norm_eps", 1e-5)
	return err
}

// phi3RopeType refuses a rotary type other than the unscaled one:
// Phi3Config takes only it and "longrope" (Phi-3's long-context models
// rescale the frequencies by short_factor and long_factor, which is not
// built; older files call it "su" or "yarn").
func phi3RopeType(keys configKeys) error {
	for _, name := range ropeDicts {
		dict, err := keys.dict(name)
		if err != nil {
			return err
		}
		for _, field := range []string{"rope_type", "type"} {
			kind, err := dict.str(field, unscaledRope)
			switch {
			case err != nil:
				return errors.Wrap(err, name)
			case kind == "longrope" || kind == "su" || kind == "yarn":
				return errors.Errorf("%s.%s = %s: Phi-3's longrope, not built (it rescales the rotary frequencies by short_factor and long_factor)",
					name, field, msg.Quote(kind))
			case kind != unscaledRope:
				return errors.Errorf("%s.%s = %s: not a Phi-3 rotary type (Phi3Config takes %s or \"longrope\")",
					name, field, msg.Quote(kind), msg.Quote(unscaledRope))
			}
		}
	}
	return nil
}

// phi3Tensors lists the names a Phi3ForCausalLM's files may hold: Llama's,
// with qkv_proj for q_proj, k_proj and v_proj (it holds [q | k | v] as the
// project's fused qkv does) and gate_up_proj for gate_proj and up_proj
// (its rows [gate (F) | up (F)] fill the MLP's gate and up).
func phi3Tensors(cfg model.Config) map[string]target {
	names := llamaTensors(cfg)
	for i := range cfg.Layers {
		hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
		for _, p := range []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj"} {
			delete(names, hf+p+".weight")
		}
		names[hf+"self_attn.qkv_proj.weight"] = target{param: own + "attn.qkv.weight"}
		names[hf+"mlp.gate_up_proj.weight"] = target{split: []target{
			{param: own + "mlp.gate.weight", part: rows{0, cfg.DFF}},
			{param: own + "mlp.up.weight", part: rows{0, cfg.DFF}},
		}}
	}
	return names
}

// olmo2Config maps an Olmo2ForCausalLM's config.json to a model.Config,
// with Olmo2Config's defaults for absent keys: RMSNorm after each
// sublayer only (x + norm(f(x))), an RMSNorm over the whole q and k
// projections before rotary positions, SwiGLU, q/k/v/o biases with
// attention_bias (false), and an untied head.
func olmo2Config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, Position: model.PositionRope,
		MLPBias: model.FlagOff, QKNorm: true, QKNormScope: model.QKScopeAll, NormPlacement: model.PlacementPost}
	if err := llamaShaped(keys, &cfg, 50304, 4096, 11008, 32, 32, 2048); err != nil {
		return model.Config{}, err
	}
	var err error
	if err = setRope(keys, &cfg); err != nil {
		return model.Config{}, err
	}
	if cfg.QKVBias, err = keys.boolean("attention_bias", false); err != nil {
		return model.Config{}, err
	}
	cfg.OutBias = cfg.QKVBias
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", false); err != nil {
		return model.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// olmo2Tensors lists the names an Olmo2ForCausalLM's files may hold:
// Llama's with its QK-norm (q_norm H·d, k_norm G·d), less input_layernorm,
// with the norms after attention (post_attention_layernorm) and after the
// MLP (post_feedforward_layernorm).
func olmo2Tensors(cfg model.Config) map[string]target {
	names := llamaTensors(cfg)
	for i := range cfg.Layers {
		hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
		delete(names, hf+"input_layernorm.weight")
		names[hf+"post_attention_layernorm.weight"] = target{param: own + "ln1_post.weight"}
		names[hf+"post_feedforward_layernorm.weight"] = target{param: own + "ln2_post.weight"}
	}
	return names
}
