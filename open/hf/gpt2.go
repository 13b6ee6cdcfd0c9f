package hf

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// gpt2Activations maps transformers' activation_function names to the
// model's activations: the tanh form under its three names (gelu_new is
// GPT-2's own; gelu_fast and gelu_pytorch_tanh compute the same formula)
// and the exact erf form.
var gpt2Activations = map[string]string{
	"gelu_new":          model.ActivationGELUTanh,
	"gelu_fast":         model.ActivationGELUTanh,
	"gelu_pytorch_tanh": model.ActivationGELUTanh,
	"gelu":              model.ActivationGELU,
}

// gpt2Fixed are GPT2Config's switches that change the forward from the
// project's, with the only value (transformers' default) Load accepts.
var gpt2Fixed = []struct {
	key  string
	want bool
	why  string
}{
	{"scale_attn_weights", true, "scores are always scaled by 1/sqrt(head size)"},
	{"scale_attn_by_inverse_layer_idx", false, "scores are never scaled by 1/(layer+1)"},
	{"add_cross_attention", false, "a decoder-only model has no cross-attention"},
}

// gpt2Config maps a GPT2LMHeadModel's config.json to a model.Config, with
// GPT2Config's defaults for absent keys.
func gpt2Config(keys configKeys) (model.Config, error) {
	var cfg model.Config
	var err error
	sizes := []struct {
		key  string
		def  int
		dest *int
		read func(key string, def int) (int, error)
	}{
		{"vocab_size", 50257, &cfg.Vocab, keys.size}, {"n_embd", 768, &cfg.DModel, keys.size},
		{"n_layer", 12, &cfg.Layers, keys.layerCount}, {"n_head", 12, &cfg.Heads, keys.headCount},
	}
	for _, s := range sizes {
		if *s.dest, err = s.read(s.key, s.def); err != nil {
			return model.Config{}, err
		}
	}
	if cfg.Context, err = gpt2Positions(keys); err != nil {
		return model.Config{}, err
	}
	if cfg.DModel%cfg.Heads != 0 {
		return model.Config{}, errors.Errorf("n_embd = %d is not divisible by n_head = %d", cfg.DModel, cfg.Heads)
	}
	if cfg.DFF, err = keys.size("n_inner", 4*cfg.DModel); err != nil {
		return model.Config{}, err
	}
	if cfg.Activation, err = geluActivation(keys, "activation_function", "gelu_new"); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = normEps(keys, "layer_norm_epsilon", model.DefaultNormEps); err != nil {
		return model.Config{}, err
	}
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", true); err != nil {
		return model.Config{}, err
	}
	if err := gpt2CheckFixed(keys); err != nil {
		return model.Config{}, err
	}
	cfg.MLP, cfg.QKVBias, cfg.OutBias = true, true, true
	cfg.Position, cfg.Norm = model.PositionLearned, model.NormLayer
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// gpt2Positions is the position table's length: n_positions, or n_ctx in
// configs written before n_positions existed.
func gpt2Positions(keys configKeys) (int, error) {
	if !keys.present("n_positions") && keys.present("n_ctx") {
		return keys.size("n_ctx", 0)
	}
	return keys.size("n_positions", 1024)
}

// geluActivation is the activation key names (def when absent), one of
// gpt2Activations: GPT-2's activation_function, GPT-Neo's too, GPT-NeoX's
// hidden_act.
func geluActivation(keys configKeys, key, def string) (string, error) {
	name, err := keys.str(key, def)
	if err != nil {
		return "", err
	}
	if act, ok := gpt2Activations[name]; ok {
		return act, nil
	}
	known := make([]string, 0, len(gpt2Activations))
	for k := range gpt2Activations {
		known = append(known, k)
	}
	sort.Strings(known)
	return "", errors.Errorf("%s = %s: not supported; supported: %s", key, msg.Quote(name), strings.Join(known, ", "))
}

// gpt2CheckFixed refuses the switches the model cannot follow, and a
// config whose heads were pruned (each layer then has its own widths).
func gpt2CheckFixed(keys configKeys) error {
	for _, f := range gpt2Fixed {
		v, err := keys.boolean(f.key, f.want)
		if err != nil {
			return err
		}
		if v != f.want {
			return errors.Errorf("%s = %t: not supported (%s)", f.key, v, f.why)
		}
	}
	if keys.present("pruned_heads") {
		var pruned map[string]any
		if err := json.Unmarshal(keys["pruned_heads"], &pruned); err != nil || len(pruned) > 0 {
			return keys.wrongValue("pruned_heads", "{} (a model with pruned heads has layers of different widths)")
		}
	}
	return nil
}

// gpt2Block maps the names of block i under GPT2Model (the "transformer."
// of GPT2LMHeadModel) to the project's: Conv1D weights are stored (in, out).
func gpt2Block(i int) map[string]target {
	hf, own := fmt.Sprintf("h.%d.", i), fmt.Sprintf("blocks.%d.", i)
	names := map[string]target{
		"attn.bias":        {}, // the causal mask, a buffer
		"attn.masked_bias": {}, // the mask's fill value, a buffer
	}
	for _, p := range []struct {
		hf, own   string
		transpose bool
	}{
		{"ln_1.weight", "ln1.weight", false}, {"ln_1.bias", "ln1.bias", false},
		{"attn.c_attn.weight", "attn.qkv.weight", true}, {"attn.c_attn.bias", "attn.qkv.bias", false},
		{"attn.c_proj.weight", "attn.out.weight", true}, {"attn.c_proj.bias", "attn.out.bias", false},
		{"ln_2.weight", "ln2.weight", false}, {"ln_2.bias", "ln2.bias", false},
		{"mlp.c_fc.weight", "mlp.fc.weight", true}, {"mlp.c_fc.bias", "mlp.fc.bias", false},
		{"mlp.c_proj.weight", "mlp.proj.weight", true}, {"mlp.c_proj.bias", "mlp.proj.bias", false},
	} {
		names[p.hf] = target{param: own + p.own, transpose: p.transpose}
	}
	out := make(map[string]target, len(names))
	for k, v := range names {
		out[hf+k] = v
	}
	return out
}

// gpt2Tensors lists the names a GPT2LMHeadModel's files may hold.
func gpt2Tensors(cfg model.Config) map[string]target {
	return gpt2LayoutTensors(cfg, gpt2Block)
}

// gpt2LayoutTensors lists the names the files of a model laid out as
// GPT-2's may hold (GPT-2's, GPT-Neo's): the base model's (embeddings,
// block(i) for each layer, ln_f) with or without the "transformer."
// prefix, and the head, lm_head.weight, ignored when tied to wte
// (transformers then uses wte).
func gpt2LayoutTensors(cfg model.Config, block func(i int) map[string]target) map[string]target {
	base := map[string]target{
		"wte.weight": {param: "tok_emb.weight"}, "wpe.weight": {param: "pos_emb.weight"},
		"ln_f.weight": {param: "ln_f.weight"}, "ln_f.bias": {param: "ln_f.bias"},
	}
	for i := range cfg.Layers {
		for k, v := range block(i) {
			base[k] = v
		}
	}
	out := make(map[string]target, 2*len(base)+1)
	for k, v := range base {
		out[k], out["transformer."+k] = v, v
	}
	out["lm_head.weight"] = target{param: "lm_head.weight"}
	if cfg.TieEmbeddings {
		out["lm_head.weight"] = target{ignoredShape: []int{cfg.Vocab, cfg.DModel}}
	}
	return out
}

func gpt2Sizes(cfg model.Config) string {
	return fmt.Sprintf("config.json has vocab_size %d, n_positions %d, n_embd %d, n_inner %d, n_layer %d",
		cfg.Vocab, cfg.Context, cfg.DModel, cfg.DFF, cfg.Layers)
}
