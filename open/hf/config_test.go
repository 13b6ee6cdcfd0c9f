package hf

import (
	"slices"
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
		checkConfig(t, c.name, "GPT2LMHeadModel", "gpt2", c.keys, c.want)
	}
}

// configJSON is a config.json of class and modelType with keys besides.
func configJSON(class, modelType, keys string) []byte {
	raw := `{"architectures": ["` + class + `"], "model_type": "` + modelType + `"`
	if keys != "" {
		raw += ", " + keys
	}
	return []byte(raw + "}")
}

// checkConfig fails unless the config.json of class and modelType with
// keys besides maps to want.
func checkConfig(t *testing.T, name, class, modelType, keys string, want model.Config) {
	t.Helper()
	parsed, err := parseConfig(configJSON(class, modelType, keys))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := findArchitecture(parsed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := arch.config(parsed)
	if err != nil {
		t.Errorf("%s: %v", name, err)
	} else if got != want {
		t.Errorf("%s: %+v\nwant %+v", name, got, want)
	}
}

// TestLlamaFamilyConfig: a Llama, Mistral or Qwen 2 config.json maps to
// the model.Config of its definition, with each config class's
// transformers defaults for the keys it leaves out (Mistral's 8 kv heads,
// all heads when null, and window of 4096, none when null; Qwen 2's 32 kv
// heads and q/k/v biases), rope_theta in both of transformers' layouts,
// the unscaled rope_type accepted, and a sliding window only where every
// layer has it.
func TestLlamaFamilyConfig(t *testing.T) {
	llama := model.Config{Vocab: 32000, Context: 2048, DModel: 4096, Heads: 32, Layers: 32, MLP: true, DFF: 11008,
		Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, NormEps: 1e-6, Activation: model.ActivationSwiGLU,
		MLPBias: model.FlagOff}
	with := func(c model.Config, edit func(*model.Config)) model.Config { edit(&c); return c }
	mistral := with(llama, func(c *model.Config) { c.Context, c.DFF, c.KVHeads, c.Window = 131072, 14336, 8, 4096 })
	qwen2 := with(llama, func(c *model.Config) { c.Vocab, c.Context, c.DFF, c.QKVBias = 151936, 32768, 22016, true })
	for _, c := range []struct {
		name, class, modelType, keys string
		want                         model.Config
	}{
		{"llama defaults", "LlamaForCausalLM", "llama", ``, llama},
		{"mistral defaults", "MistralForCausalLM", "mistral", ``, mistral},
		{"qwen2 defaults", "Qwen2ForCausalLM", "qwen2", ``, qwen2},
		{"llama sizes", "LlamaForCausalLM", "llama",
			`"vocab_size": 100, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 3, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 128`,
			with(llama, func(c *model.Config) {
				c.Vocab, c.DModel, c.DFF, c.Layers, c.Heads, c.KVHeads, c.Context = 100, 64, 96, 3, 8, 2, 128
			})},
		{"llama biases", "LlamaForCausalLM", "llama", `"attention_bias": true, "mlp_bias": true, "pretraining_tp": 2`,
			with(llama, func(c *model.Config) { c.QKVBias, c.OutBias, c.MLPBias = true, true, model.FlagOn })},
		{"llama tied, eps 1e-5", "LlamaForCausalLM", "llama", `"tie_word_embeddings": true, "rms_norm_eps": 1e-5`,
			with(llama, func(c *model.Config) { c.TieEmbeddings, c.NormEps = true, 0 })},
		{"rope_theta, rope_scaling null", "LlamaForCausalLM", "llama", `"rope_theta": 500000.0, "rope_scaling": null`,
			with(llama, func(c *model.Config) { c.RopeBase = 500000 })},
		{"rope_scaling default", "LlamaForCausalLM", "llama", `"rope_scaling": {"rope_type": "default"}`, llama},
		{"rope_parameters", "LlamaForCausalLM", "llama", `"rope_parameters": {"rope_type": "default", "rope_theta": 1e6}`,
			with(llama, func(c *model.Config) { c.RopeBase = 1e6 })},
		{"mistral without a window", "MistralForCausalLM", "mistral", `"sliding_window": null`,
			with(mistral, func(c *model.Config) { c.Window = 0 })},
		{"mistral kv heads null", "MistralForCausalLM", "mistral", `"num_key_value_heads": null`,
			with(mistral, func(c *model.Config) { c.KVHeads = 0 })},
		{"mistral multi-head", "MistralForCausalLM", "mistral", `"num_key_value_heads": 32, "sliding_window": 16`,
			with(mistral, func(c *model.Config) { c.KVHeads, c.Window = 0, 16 })},
		{"qwen2 window on every layer", "Qwen2ForCausalLM", "qwen2", `"use_sliding_window": true, "max_window_layers": 0`,
			with(qwen2, func(c *model.Config) { c.Window = 4096 })},
		{"qwen2 window on no layer", "Qwen2ForCausalLM", "qwen2", `"use_sliding_window": true, "max_window_layers": 32`, qwen2},
		{"qwen2 layer_types sliding", "Qwen2ForCausalLM", "qwen2",
			`"use_sliding_window": true, "sliding_window": 8, "num_hidden_layers": 2, "layer_types": ["sliding_attention", "sliding_attention"]`,
			with(qwen2, func(c *model.Config) { c.Window, c.Layers = 8, 2 })},
		{"qwen2 window unused", "Qwen2ForCausalLM", "qwen2", `"use_sliding_window": false, "sliding_window": 8, "max_window_layers": 0`, qwen2},
	} {
		checkConfig(t, c.name, c.class, c.modelType, c.keys, c.want)
	}
}

// TestSpecials: bos_token_id and eos_token_id become Specials: one id or
// (eos) a list, null for none, the config class's default when absent
// (none for Qwen 2, and none for a default past a smaller vocabulary);
// ids outside the vocabulary and a list of BOS are refused naming the key.
func TestSpecials(t *testing.T) {
	for _, c := range []struct {
		name, class, modelType, keys string
		want                         Specials
		err                          string
	}{
		{"llama defaults", "LlamaForCausalLM", "llama", ``, Specials{BOS: 1, EOS: []int{2}}, ""},
		{"qwen2 defaults", "Qwen2ForCausalLM", "qwen2", ``, Specials{BOS: -1}, ""},
		{"gpt2 default past the vocabulary", "GPT2LMHeadModel", "gpt2", `"vocab_size": 96`, Specials{BOS: -1}, ""},
		{"a list of eos", "LlamaForCausalLM", "llama", `"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "vocab_size": 128256`,
			Specials{BOS: 128000, EOS: []int{128001, 128008, 128009}}, ""},
		{"null", "MistralForCausalLM", "mistral", `"bos_token_id": null, "eos_token_id": null`, Specials{BOS: -1}, ""},
		{"eos outside the vocabulary", "Qwen2ForCausalLM", "qwen2", `"eos_token_id": 151936`, Specials{},
			"eos_token_id = 151936: token 151936 is outside the vocabulary [0, 151936)"},
		{"bos a list", "LlamaForCausalLM", "llama", `"bos_token_id": [1, 2]`, Specials{}, "bos_token_id = [1,2]: want one token id or null"},
		{"eos a string", "LlamaForCausalLM", "llama", `"eos_token_id": "</s>"`, Specials{}, `eos_token_id = "</s>": want a token id, a list of them, or null`},
	} {
		_, _, got, err := parseModelConfig(configJSON(c.class, c.modelType, c.keys))
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err == "" && (got.BOS != c.want.BOS || !slices.Equal(got.EOS, c.want.EOS)):
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
