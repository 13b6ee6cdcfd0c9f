package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// neoxConfig maps a GPTNeoXForCausalLM's config.json (Pythia, GPT-NeoX
// 20B) to a model.Config, with GPTNeoXConfig's defaults for absent keys:
// LayerNorm blocks, rotary positions on rotary_pct of each head's
// channels (0.25), q/k/v and dense biases with attention_bias (true), an
// MLP with biases, the parallel residual with use_parallel_residual
// (true), and an untied embed_out (tie_word_embeddings false).
func neoxConfig(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Position: model.PositionRope, Norm: model.NormLayer}
	if err := readSizes(keys, &cfg, 50432, 6144, 24576, 44, 64, 2048); err != nil {
		return model.Config{}, err
	}
	if cfg.DModel%cfg.Heads != 0 {
		return model.Config{}, errors.Errorf("hidden_size = %d is not divisible by num_attention_heads = %d", cfg.DModel, cfg.Heads)
	}
	var err error
	if cfg.Activation, err = geluActivation(keys, "hidden_act", "gelu"); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = normEps(keys, "layer_norm_eps", 1e-5); err != nil {
		return model.Config{}, err
	}
	if err = partialRope(keys, "rotary_pct", 0.25, "rotary_emb_base", &cfg); err != nil {
		return model.Config{}, err
	}
	if cfg.QKVBias, err = keys.boolean("attention_bias", true); err != nil {
		return model.Config{}, err
	}
	cfg.OutBias = cfg.QKVBias
	if cfg.ParallelResidual, err = keys.boolean("use_parallel_residual", true); err != nil {
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

// neoxQKV is how GPTNeoXAttention reads query_key_value's rows (3·H·d):
// viewed (H, 3, d), head h's q, k and v are consecutive, where the
// project's fused qkv has every head's q, then every k, then every v.
func neoxQKV(cfg model.Config, param string) target {
	h, d := cfg.Heads, cfg.DHead()
	split := make([]target, 0, 3*h)
	for head := range h {
		for part := range 3 {
			split = append(split, target{param: param, part: rows{part*h*d + head*d, d}})
		}
	}
	return target{split: split}
}

// neoxBlock maps the names of layer i under "gpt_neox." to the project's.
func neoxBlock(cfg model.Config, i int) map[string]target {
	hf, own := fmt.Sprintf("gpt_neox.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
	names := map[string]target{
		// Buffers the files older transformers wrote (Pythia's) hold in every
		// layer: the causal mask, its fill value, the rotary frequencies.
		hf + "attention.bias":                   {},
		hf + "attention.masked_bias":            {},
		hf + "attention.rotary_emb.inv_freq":    {},
		hf + "attention.query_key_value.weight": neoxQKV(cfg, own+"attn.qkv.weight"),
		hf + "attention.dense.weight":           {param: own + "attn.out.weight"},
	}
	if cfg.QKVBias {
		names[hf+"attention.query_key_value.bias"] = neoxQKV(cfg, own+"attn.qkv.bias")
	}
	if cfg.OutBias {
		names[hf+"attention.dense.bias"] = target{param: own + "attn.out.bias"}
	}
	for _, p := range [][2]string{
		{"input_layernorm", "ln1"}, {"post_attention_layernorm", "ln2"},
		{"mlp.dense_h_to_4h", "mlp.fc"}, {"mlp.dense_4h_to_h", "mlp.proj"},
	} {
		names[hf+p[0]+".weight"] = target{param: own + p[1] + ".weight"}
		names[hf+p[0]+".bias"] = target{param: own + p[1] + ".bias"}
	}
	return names
}

// neoxTensors lists the names a GPTNeoXForCausalLM's files may hold; the
// head, embed_out, is ignored when tied to embed_in.
func neoxTensors(cfg model.Config) map[string]target {
	names := map[string]target{
		"gpt_neox.embed_in.weight":         {param: "tok_emb.weight"},
		"gpt_neox.final_layer_norm.weight": {param: "ln_f.weight"},
		"gpt_neox.final_layer_norm.bias":   {param: "ln_f.bias"},
		"embed_out.weight":                 {param: "lm_head.weight"},
	}
	if cfg.TieEmbeddings {
		names["embed_out.weight"] = target{ignoredShape: []int{cfg.Vocab, cfg.DModel}}
	}
	for i := range cfg.Layers {
		for k, v := range neoxBlock(cfg, i) {
			names[k] = v
		}
	}
	return names
}

func neoxSizes(cfg model.Config) string {
	return fmt.Sprintf("config.json has vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, num_attention_heads %d",
		cfg.Vocab, cfg.DModel, cfg.DFF, cfg.Layers, cfg.Heads)
}
