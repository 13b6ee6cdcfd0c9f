package hf

import (
	"testing"

	"github.com/attnscope/attnscope/model"
)

// TestGPT2Config: a GPT-2 config.json maps to the model.Config of GPT-2's
// definition, with transformers' defaults for the keys it leaves out
// (GPT-2 small's sizes), each activation name to its formula, n_ctx read
// when n_positions is absent, and reorder_and_upcast_attn (a matter of
// precision in mixed-precision training, not of the function) accepted.
func TestGPT2Config(t *testing.T) {
	small := model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072,
		QKVBias: true, OutBias: true, Position: model.PositionLearned, Norm: model.NormLayer,
		Activation: model.ActivationGELUTanh, TieEmbeddings: true}
	with := func(edit func(*model.Config)) model.Config {
		c := small
		edit(&c)
		return c
	}
	for _, c := range []struct {
		name string
		keys string // config.json's keys besides architectures and model_type
		want model.Config
	}{
		{"defaults", ``, small},
		{"gelu_new", `"activation_function": "gelu_new"`, small},
		{"gelu_fast", `"activation_function": "gelu_fast"`, small},
		{"gelu_pytorch_tanh", `"activation_function": "gelu_pytorch_tanh"`, small},
		{"exact gelu", `"activation_function": "gelu"`, with(func(c *model.Config) { c.Activation = model.ActivationGELU })},
		{"n_ctx alone", `"n_ctx": 64`, with(func(c *model.Config) { c.Context = 64 })},
		{"n_positions over n_ctx", `"n_ctx": 64, "n_positions": 128`, with(func(c *model.Config) { c.Context = 128 })},
		{"sizes", `"n_embd": 64, "n_head": 2, "n_layer": 3, "vocab_size": 10, "n_inner": null`,
			with(func(c *model.Config) { c.DModel, c.Heads, c.Layers, c.Vocab, c.DFF = 64, 2, 3, 10, 256 })},
		{"n_inner", `"n_inner": 100`, with(func(c *model.Config) { c.DFF = 100 })},
		{"untied", `"tie_word_embeddings": false`, with(func(c *model.Config) { c.TieEmbeddings = false })},
		{"eps", `"layer_norm_epsilon": 1e-6`, with(func(c *model.Config) { c.NormEps = 1e-6 })},
		{"GPT-2's eps", `"layer_norm_epsilon": 1e-5`, small},
		{"upcast", `"reorder_and_upcast_attn": true, "scale_attn_weights": true, "pruned_heads": {}`, small},
	} {
		raw := `{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"`
		if c.keys != "" {
			raw += ", " + c.keys
		}
		keys, err := parseConfig([]byte(raw + "}"))
		if err != nil {
			t.Fatal(err)
		}
		arch, err := findArchitecture(keys)
		if err != nil {
			t.Fatal(err)
		}
		got, err := arch.config(keys)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if got != c.want {
			t.Errorf("%s: %+v\nwant %+v", c.name, got, c.want)
		}
	}
}
