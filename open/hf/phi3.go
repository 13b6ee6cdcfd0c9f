package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// phi3Config maps a Phi3ForCausalLM's config.json to a model.Config, with
// Phi3Config's defaults for absent keys: Llama's block (RMSNorm, SwiGLU,
// rotary grouped-query attention, no biases) with head_dim read apart from
// hidden/heads, rotary positions on partial_rotary_factor of each head's
// channels (1), sliding_window keys on every layer (None: all), and an
// untied head. Its longrope rotary scaling ("su" and "yarn" in older
// files) is refused by name.
func phi3Config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, Position: model.PositionRope, MLPBias: model.FlagOff}
	if err := readSizeKeys([]sizeKey{
		{"vocab_size", 32064, &cfg.Vocab, keys.size}, {"hidden_size", 3072, &cfg.DModel, keys.size},
		{"intermediate_size", 8192, &cfg.DFF, keys.size}, {"num_hidden_layers", 32, &cfg.Layers, keys.layerCount},
		{"num_attention_heads", 32, &cfg.Heads, keys.headCount}, {"max_position_embeddings", 4096, &cfg.Context, keys.size},
	}); err != nil {
		return model.Config{}, err
	}
	if err := llamaShapedAttention(keys, &cfg); err != nil {
		return model.Config{}, err
	}
	if err := refuseRopeTypes(keys, map[string]string{"longrope": "longrope", "su": "longrope", "yarn": "longrope"},
		"Phi-3's long-context models rescale rotary frequencies by short_factor and long_factor"); err != nil {
		return model.Config{}, err
	}
	var err error
	if err = partialRope(keys, "partial_rotary_factor", 1, "", &cfg); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = normEps(keys, "rms_norm_eps", 1e-5); err != nil {
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

// llamaShapedAttention reads what Phi-3's and OLMo 2's attention share
// with Llama's: the head width (head_dim), the key/value heads, and SiLU,
// the one activation SwiGLU is built with.
func llamaShapedAttention(keys configKeys, cfg *model.Config) error {
	var err error
	if cfg.HeadDim, err = headDim(keys, cfg.DModel, cfg.Heads); err != nil {
		return err
	}
	if cfg.KVHeads, err = kvHeads(keys, cfg.Heads); err != nil {
		return err
	}
	return llamaActivation(keys)
}

// phi3Block maps the names of layer i under "model." to the project's:
// qkv_proj holds [q | k | v] as the project's fused qkv does, and
// gate_up_proj's rows [gate (F) | up (F)] fill the MLP's gate and up.
func phi3Block(cfg model.Config, i int) map[string]target {
	hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
	return map[string]target{
		hf + "input_layernorm.weight":          {param: own + "ln1.weight"},
		hf + "post_attention_layernorm.weight": {param: own + "ln2.weight"},
		hf + "self_attn.qkv_proj.weight":       {param: own + "attn.qkv.weight"},
		hf + "self_attn.o_proj.weight":         {param: own + "attn.out.weight"},
		hf + "mlp.gate_up_proj.weight": {split: []target{
			{param: own + "mlp.gate.weight", part: rows{0, cfg.DFF}},
			{param: own + "mlp.up.weight", part: rows{0, cfg.DFF}},
		}},
		hf + "mlp.down_proj.weight": {param: own + "mlp.down.weight"},
	}
}

// olmo2Config maps an Olmo2ForCausalLM's config.json to a model.Config,
// with Olmo2Config's defaults for absent keys: RMSNorm after each
// sublayer only (x + norm(f(x))), an RMSNorm over the whole q and k
// projections before rotary positions, SwiGLU, q/k/v/o biases with
// attention_bias (false), and an untied head.
func olmo2Config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, Position: model.PositionRope,
		MLPBias: model.FlagOff, QKNorm: true, QKNormScope: model.QKScopeAll, NormPlacement: model.PlacementPost}
	if err := readSizeKeys([]sizeKey{
		{"vocab_size", 50304, &cfg.Vocab, keys.size}, {"hidden_size", 4096, &cfg.DModel, keys.size},
		{"intermediate_size", 11008, &cfg.DFF, keys.size}, {"num_hidden_layers", 32, &cfg.Layers, keys.layerCount},
		{"num_attention_heads", 32, &cfg.Heads, keys.headCount}, {"max_position_embeddings", 2048, &cfg.Context, keys.size},
	}); err != nil {
		return model.Config{}, err
	}
	if err := llamaShapedAttention(keys, &cfg); err != nil {
		return model.Config{}, err
	}
	var err error
	if err = setRope(keys, &cfg); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = normEps(keys, "rms_norm_eps", 1e-5); err != nil {
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

// olmo2Block maps the names of layer i under "model." to the project's:
// Llama's, less input_layernorm, with the norms after attention
// (post_attention_layernorm) and after the MLP (post_feedforward_layernorm)
// and the whole-projection q_norm (H·d) and k_norm (G·d).
func olmo2Block(cfg model.Config, i int) map[string]target {
	hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
	names := llamaBlock(cfg, i)
	delete(names, hf+"input_layernorm.weight")
	for name, param := range map[string]string{
		"post_attention_layernorm": "ln1_post", "post_feedforward_layernorm": "ln2_post",
		"self_attn.q_norm": "attn.q_norm", "self_attn.k_norm": "attn.k_norm",
	} {
		names[hf+name+".weight"] = target{param: own + param + ".weight"}
	}
	return names
}

// llamaShapedTensors lists the names a file of a Llama-shaped family may
// hold, its layers mapped by block: the embedding, the final norm and the
// head, ignored when tied to the embedding.
func llamaShapedTensors(block func(cfg model.Config, i int) map[string]target) func(cfg model.Config) map[string]target {
	return func(cfg model.Config) map[string]target {
		names := map[string]target{
			"model.embed_tokens.weight": {param: "tok_emb.weight"},
			"model.norm.weight":         {param: "ln_f.weight"},
			"lm_head.weight":            {param: "lm_head.weight"},
		}
		if cfg.TieEmbeddings {
			names["lm_head.weight"] = target{ignoredShape: []int{cfg.Vocab, cfg.DModel}}
		}
		for i := range cfg.Layers {
			for k, v := range block(cfg, i) {
				names[k] = v
			}
		}
		return names
	}
}

// headSizes are the sizes of a config with head_dim, for a shape error.
func headSizes(cfg model.Config) string {
	return fmt.Sprintf("%s, head_dim %d", llamaSizes(cfg), cfg.DHead())
}
