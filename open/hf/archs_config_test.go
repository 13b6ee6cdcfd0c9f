package hf

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/model"
)

// configCase is a config.json of class and model type with keys besides,
// and the model.Config it maps to.
type configCase struct {
	name, class, modelType, keys string
	want                         model.Config
}

// checkConfigs fails unless each case's config.json maps to its want.
func checkConfigs(t *testing.T, cases []configCase) {
	t.Helper()
	for _, c := range cases {
		_, got, _, err := parseModelConfig(configJSON(c.class, c.modelType, c.keys))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		} else if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func edited(c model.Config, edit func(*model.Config)) model.Config { edit(&c); return c }

// TestNeoXConfig: a GPT-NeoX config.json maps to GPTNeoXConfig's model,
// with its defaults for absent keys (gpt-neox-20b's sizes, exact gelu,
// rotary_pct 0.25 of 96 channels = 24, parallel residual, biases, an
// untied head), the rotary base and fraction in both of transformers'
// layouts (rotary_emb_base and rotary_pct; rope_parameters, whose
// partial_rotary_factor wins), a fraction of 1 read as the whole head,
// and GPTNeoXConfig's linear rope scaling.
func TestNeoXConfig(t *testing.T) {
	neox := model.Config{Vocab: 50432, Context: 2048, DModel: 6144, Heads: 64, Layers: 44, MLP: true, DFF: 24576,
		QKVBias: true, OutBias: true, Position: model.PositionRope, RopeBase: 10000, RotaryDimsKey: 24,
		Norm: model.NormLayer, Activation: model.ActivationGELU, ParallelResidual: true}
	const class, modelType = "GPTNeoXForCausalLM", "gpt_neox"
	checkConfigs(t, []configCase{
		{"defaults", class, modelType, ``, neox},
		{"pythia-70m", class, modelType, `"hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 6, "intermediate_size": 2048,
			"rotary_pct": 0.25, "rotary_emb_base": 10000, "use_parallel_residual": true, "tie_word_embeddings": false, "vocab_size": 50304`,
			edited(neox, func(c *model.Config) {
				c.DModel, c.Heads, c.Layers, c.DFF, c.RotaryDimsKey, c.Vocab = 512, 8, 6, 2048, 16, 50304
			})},
		{"rotary_emb_base", class, modelType, `"rotary_emb_base": 500`, edited(neox, func(c *model.Config) { c.RopeBase = 500 })},
		{"whole head", class, modelType, `"rotary_pct": 1.0`, edited(neox, func(c *model.Config) { c.RotaryDimsKey = 0 })},
		{"rope_parameters", class, modelType, `"rotary_pct": 1.0, "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}`,
			edited(neox, func(c *model.Config) { c.RotaryDimsKey = 48 })},
		{"linear scaling", class, modelType, `"rope_scaling": {"type": "linear", "factor": 2.0}`,
			edited(neox, func(c *model.Config) { c.RopeScaling, c.RopeFactor = model.RopeScalingLinear, 2 })},
		{"sequential, no biases, tied, gelu_new, eps", class, modelType,
			`"use_parallel_residual": false, "attention_bias": false, "tie_word_embeddings": true, "hidden_act": "gelu_new", "layer_norm_eps": 1e-6`,
			edited(neox, func(c *model.Config) {
				c.ParallelResidual, c.QKVBias, c.OutBias, c.TieEmbeddings = false, false, false, true
				c.Activation, c.NormEps = model.ActivationGELUTanh, 1e-6
			})},
	})
}

// TestGPTNeoConfig: a GPT-Neo config.json maps to GPTNeoConfig's model,
// with its defaults (gpt-neo-1.3B's sizes, d_ff 4·hidden for a null
// intermediate_size, gelu_new, a tied head, unscaled scores, a window of
// 256 on the local layers, the others global), and attention_types
// expanded to say which layers are local.
func TestGPTNeoConfig(t *testing.T) {
	neo := model.Config{Vocab: 50257, Context: 2048, DModel: 2048, Heads: 16, Layers: 24, MLP: true, DFF: 8192, OutBias: true,
		Position: model.PositionLearned, Norm: model.NormLayer, Activation: model.ActivationGELUTanh, TieEmbeddings: true,
		AttnScale: 1, Window: 256, GlobalLayers: model.NewLayerList(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22)}
	const class, modelType = "GPTNeoForCausalLM", "gpt_neo"
	checkConfigs(t, []configCase{
		{"defaults", class, modelType, ``, neo},
		{"TinyStories-1M", class, modelType, `"hidden_size": 64, "num_heads": 16, "num_layers": 8, "intermediate_size": null,
			"attention_types": [[["global", "local"], 4]], "window_size": 256, "max_position_embeddings": 2048, "vocab_size": 50257`,
			edited(neo, func(c *model.Config) {
				c.DModel, c.Heads, c.Layers, c.DFF, c.GlobalLayers = 64, 16, 8, 256, model.NewLayerList(0, 2, 4, 6)
			})},
		{"every layer local", class, modelType, `"num_layers": 2, "attention_types": [[["local"], 2]], "window_size": 4`,
			edited(neo, func(c *model.Config) { c.Layers, c.Window, c.GlobalLayers = 2, 4, "" })},
		{"every layer global", class, modelType, `"num_layers": 2, "attention_types": [[["global"], 2]], "intermediate_size": 100, "tie_word_embeddings": false`,
			edited(neo, func(c *model.Config) {
				c.Layers, c.Window, c.GlobalLayers, c.DFF, c.TieEmbeddings = 2, 0, "", 100, false
			})},
	})
	for _, c := range []struct {
		keys string
		want []bool
	}{
		{``, slices.Repeat([]bool{false, true}, 12)},
		{`"attention_types": [[["global", "local"], 1], [["local"], 2]], "attention_layers": ["global", "local", "local", "local"]`,
			[]bool{false, true, true, true}},
	} {
		keys, err := parseConfig(configJSON("GPTNeoForCausalLM", "gpt_neo", c.keys))
		if err != nil {
			t.Fatal(err)
		}
		got, err := gptNeoLayers(keys, len(c.want))
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: local layers %v (%v), want %v", c.keys, got, err, c.want)
		}
	}
}

// TestPhi3AndOlmo2Config: Phi-3's and OLMo 2's config.json map to their
// classes' models, with their defaults (Phi-3-mini's sizes and no window;
// OLMo 2 7B's sizes, post-norm, QK-norm over the whole projections),
// head_dim apart from hidden/heads, the partial rotary factor at the top
// level or in rope_parameters, and Phi-3's sliding window.
func TestPhi3AndOlmo2Config(t *testing.T) {
	phi3 := model.Config{Vocab: 32064, Context: 4096, DModel: 3072, Heads: 32, Layers: 32, MLP: true, DFF: 8192,
		Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, MLPBias: model.FlagOff}
	olmo2 := model.Config{Vocab: 50304, Context: 2048, DModel: 4096, Heads: 32, Layers: 32, MLP: true, DFF: 11008,
		Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, MLPBias: model.FlagOff,
		QKNorm: true, QKNormScope: model.QKScopeAll, NormPlacement: model.PlacementPost}
	checkConfigs(t, []configCase{
		{"phi3 defaults", "Phi3ForCausalLM", "phi3", ``, phi3},
		{"Phi-3-mini-4k", "Phi3ForCausalLM", "phi3", `"sliding_window": 2047, "rope_scaling": null, "vocab_size": 32064, "rope_theta": 10000.0`,
			edited(phi3, func(c *model.Config) { c.Window = 2047 })},
		{"phi3 head_dim, kv heads, partial", "Phi3ForCausalLM", "phi3",
			`"head_dim": 128, "num_key_value_heads": 8, "partial_rotary_factor": 0.75, "sliding_window": null, "rms_norm_eps": 1e-6`,
			edited(phi3, func(c *model.Config) { c.HeadDim, c.KVHeads, c.RotaryDimsKey, c.NormEps = 128, 8, 96, 1e-6 })},
		{"phi3 rope_parameters", "Phi3ForCausalLM", "phi3", `"rope_parameters": {"rope_type": "default", "rope_theta": 250000, "partial_rotary_factor": 0.5}`,
			edited(phi3, func(c *model.Config) { c.RopeBase, c.RotaryDimsKey = 250000, 48 })},
		{"olmo2 defaults", "Olmo2ForCausalLM", "olmo2", ``, olmo2},
		{"OLMo-2-1B", "Olmo2ForCausalLM", "olmo2", `"hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 16, "intermediate_size": 8192,
			"rope_theta": 500000, "rms_norm_eps": 1e-6, "vocab_size": 100352, "max_position_embeddings": 4096, "attention_bias": false`,
			edited(olmo2, func(c *model.Config) {
				c.DModel, c.Heads, c.Layers, c.DFF, c.RopeBase, c.NormEps, c.Vocab, c.Context = 2048, 16, 16, 8192, 500000, 1e-6, 100352, 4096
			})},
		{"olmo2 kv heads, biases, tied", "Olmo2ForCausalLM", "olmo2", `"num_key_value_heads": 4, "attention_bias": true, "tie_word_embeddings": true`,
			edited(olmo2, func(c *model.Config) { c.KVHeads, c.QKVBias, c.OutBias, c.TieEmbeddings = 4, true, true, true })},
	})
}

// TestFusedLayoutsRefuse: what the four architectures cannot be read as
// is refused in one line naming the key and value.
func TestFusedLayoutsRefuse(t *testing.T) {
	for _, c := range []struct {
		name, class, modelType, keys, want string
	}{
		{"neox odd rotary channels", "GPTNeoXForCausalLM", "gpt_neox", `"rotary_pct": 0.1`,
			"rotary_pct = 0.1 turns int(96 × 0.1) = 9 channels of each head; rotary positions turn an even number > 0 of them"},
		{"neox no rotary channels", "GPTNeoXForCausalLM", "gpt_neox", `"rotary_pct": 0`, "rotary_pct = 0: want a fraction in (0, 1]"},
		{"neox dict fraction", "GPTNeoXForCausalLM", "gpt_neox", `"rope_parameters": {"partial_rotary_factor": 2}`,
			"rope_parameters.partial_rotary_factor = 2: want a fraction in (0, 1]"},
		{"neox dynamic scaling", "GPTNeoXForCausalLM", "gpt_neox", `"rope_scaling": {"type": "dynamic", "factor": 2.0}`,
			`rope_scaling.type = "dynamic": not built`},
		{"neox relu", "GPTNeoXForCausalLM", "gpt_neox", `"hidden_act": "relu"`, `hidden_act = "relu": not supported; supported: gelu, gelu_fast, gelu_new, gelu_pytorch_tanh`},
		{"neo layers and types disagree", "GPTNeoForCausalLM", "gpt_neo", `"num_layers": 3`,
			`attention_types = [[["global","local"],12]] gives 24 layers; num_layers = 3`},
		{"neo attention_layers differ", "GPTNeoForCausalLM", "gpt_neo",
			`"num_layers": 2, "attention_types": [[["global", "local"], 1]], "attention_layers": ["local", "global"]`,
			`attention_layers = ["local","global"]: not the attention_types expanded, [global local]`},
		{"neo sparse layer", "GPTNeoForCausalLM", "gpt_neo", `"num_layers": 1, "attention_types": [[["sparse"], 1]]`,
			`attention_types: layer kind "sparse": not supported; supported: global, local`},
		{"neo count past the bound", "GPTNeoForCausalLM", "gpt_neo", `"attention_types": [[["global", "local"], 4611686018427387904]]`,
			`attention_types = [[["global","local"],4611686018427387904]]: want a list of [[kinds...], count] with kinds "global" or "local"`},
		{"phi3 longrope", "Phi3ForCausalLM", "phi3", `"rope_scaling": {"type": "longrope", "short_factor": [1], "long_factor": [1]}`,
			`rope_scaling.type = "longrope": Phi-3's longrope, not built (it rescales the rotary frequencies by short_factor and long_factor)`},
		{"phi3 su", "Phi3ForCausalLM", "phi3", `"rope_scaling": {"type": "su"}`, `rope_scaling.type = "su": Phi-3's longrope, not built`},
		{"phi3 linear", "Phi3ForCausalLM", "phi3", `"rope_scaling": {"rope_type": "linear", "factor": 2}`,
			`rope_scaling.rope_type = "linear": not a Phi-3 rotary type (Phi3Config takes "default" or "longrope")`},
		{"phi3 gelu", "Phi3ForCausalLM", "phi3", `"hidden_act": "gelu"`, `hidden_act = "gelu": not supported; supported: silu`},
		{"phi3 kv heads", "Phi3ForCausalLM", "phi3", `"num_key_value_heads": 5`, "num_key_value_heads = 5 does not divide num_attention_heads = 32"},
		{"olmo2 partial rotary", "Olmo2ForCausalLM", "olmo2", `"partial_rotary_factor": 0.5`, "partial_rotary_factor = 0.5: not built"},
		{"olmo2 no head width", "Olmo2ForCausalLM", "olmo2", `"hidden_size": 100, "num_attention_heads": 8`,
			"hidden_size = 100 is not divisible by num_attention_heads = 8 (and head_dim is not given)"},
	} {
		_, _, _, err := parseModelConfig(configJSON(c.class, c.modelType, c.keys))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant one starting %q", c.name, err, c.want)
		}
	}
}
