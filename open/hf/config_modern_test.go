package hf

import (
	"math"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/model"
)

// TestLlama3Config: Llama 3.x's rope_scaling (rope_type llama3, as
// Llama-3.2-1B's config.json gives it) and linear scaling, in each layout
// transformers writes (rope_scaling with rope_type, an old file's "type",
// transformers 5's rope_parameters), map to the model's rope keys; a
// head_dim apart from hidden_size / num_attention_heads is HeadDim, one
// equal to it 0.
func TestLlama3Config(t *testing.T) {
	llama := model.Config{Vocab: 32000, Context: 2048, DModel: 4096, Heads: 32, Layers: 32, MLP: true, DFF: 11008,
		Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, NormEps: 1e-6, Activation: model.ActivationSwiGLU,
		MLPBias: model.FlagOff}
	with := func(edit func(*model.Config)) model.Config { c := llama; edit(&c); return c }
	for _, c := range []struct {
		name, keys string
		want       model.Config
	}{
		{"llama3", `"rope_theta": 500000.0, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}`,
			with(func(c *model.Config) {
				c.RopeBase, c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalContext = 500000, "llama3", 32, 1, 4, 8192
			})},
		{"llama3 in rope_parameters", `"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 4096}`,
			with(func(c *model.Config) {
				c.RopeBase, c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalContext = 500000, "llama3", 8, 2, 8, 4096
			})},
		{"llama3 in both dicts", `"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 4096}, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 4096}`,
			with(func(c *model.Config) {
				c.RopeBase, c.RopeScaling, c.RopeFactor, c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalContext = 500000, "llama3", 8, 2, 8, 4096
			})},
		{"linear, an old file's type", `"rope_scaling": {"type": "linear", "factor": 2.0}`,
			with(func(c *model.Config) { c.RopeScaling, c.RopeFactor = "linear", 2 })},
		{"type over rope_type", `"rope_scaling": {"type": "linear", "rope_type": "default", "factor": 4.0}`,
			with(func(c *model.Config) { c.RopeScaling, c.RopeFactor = "linear", 4 })},
		{"head_dim apart", `"hidden_size": 64, "num_attention_heads": 8, "head_dim": 16`,
			with(func(c *model.Config) { c.DModel, c.Heads, c.HeadDim = 64, 8, 16 })},
		{"head_dim apart, hidden not divisible", `"hidden_size": 60, "num_attention_heads": 8, "head_dim": 8`,
			with(func(c *model.Config) { c.DModel, c.Heads, c.HeadDim = 60, 8, 8 })},
		{"head_dim hidden/heads", `"hidden_size": 64, "num_attention_heads": 8, "head_dim": 8`,
			with(func(c *model.Config) { c.DModel, c.Heads = 64, 8 })},
		{"head_dim null", `"head_dim": null`, llama},
	} {
		checkConfig(t, c.name, "LlamaForCausalLM", "llama", c.keys, c.want)
	}
}

// TestQwen3Config: a Qwen 3 config.json maps to Qwen3Config's defaults
// (head_dim 128 whatever hidden_size / num_attention_heads is, 32 kv
// heads, QK-norm), attention_bias on q, k, v and o, and a window on the
// layers from max_window_layers (or those layer_types names), the others
// global. Qwen 2 reads windows on some layers the same way.
func TestQwen3Config(t *testing.T) {
	qwen3 := model.Config{Vocab: 151936, Context: 32768, DModel: 4096, Heads: 32, Layers: 32, MLP: true, DFF: 22016,
		Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, NormEps: 1e-6, Activation: model.ActivationSwiGLU,
		MLPBias: model.FlagOff, QKNorm: true}
	with := func(c model.Config, edit func(*model.Config)) model.Config { edit(&c); return c }
	qwen2 := with(qwen3, func(c *model.Config) { c.QKNorm, c.QKVBias = false, true })
	for _, c := range []struct {
		name, class, modelType, keys string
		want                         model.Config
	}{
		{"defaults", "Qwen3ForCausalLM", "qwen3", ``, qwen3},
		{"Qwen3-0.6B", "Qwen3ForCausalLM", "qwen3",
			`"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 28, "intermediate_size": 3072, "rope_theta": 1000000, "tie_word_embeddings": true, "max_window_layers": 28, "sliding_window": null, "use_sliding_window": false`,
			with(qwen3, func(c *model.Config) {
				c.DModel, c.Heads, c.KVHeads, c.Layers, c.DFF, c.RopeBase, c.TieEmbeddings, c.HeadDim = 1024, 16, 8, 28, 3072, 1e6, true, 128
			})},
		{"attention_bias", "Qwen3ForCausalLM", "qwen3", `"attention_bias": true`,
			with(qwen3, func(c *model.Config) { c.QKVBias, c.OutBias = true, true })},
		{"windows from max_window_layers", "Qwen3ForCausalLM", "qwen3", `"num_hidden_layers": 3, "use_sliding_window": true, "sliding_window": 16, "max_window_layers": 1`,
			with(qwen3, func(c *model.Config) { c.Layers, c.Window, c.GlobalLayers = 3, 16, model.NewLayerList(0) })},
		{"windows from layer_types", "Qwen3ForCausalLM", "qwen3",
			`"num_hidden_layers": 3, "use_sliding_window": true, "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]`,
			with(qwen3, func(c *model.Config) { c.Layers, c.Window, c.GlobalLayers = 3, 16, model.NewLayerList(1) })},
		{"qwen2 windows on some layers", "Qwen2ForCausalLM", "qwen2", `"num_hidden_layers": 4, "use_sliding_window": true, "max_window_layers": 2`,
			with(qwen2, func(c *model.Config) { c.Layers, c.Window, c.GlobalLayers = 4, 4096, model.NewLayerList(0, 1) })},
	} {
		checkConfig(t, c.name, c.class, c.modelType, c.keys, c.want)
	}
}

// TestGemmaConfig: a Gemma 2 or Gemma 3 config.json maps to its config
// class's defaults (head_dim 256, 4 kv heads, a tied head, soft-caps 50
// and 30 for Gemma 2 and none for Gemma 3, a 4096 window on the sliding
// layers: Gemma 2's every other one from layer 0, Gemma 3's five of six),
// with Gemma's parts (sandwich norms scaling by 1 + w, GeGLU, embeddings
// times sqrt(hidden_size) in float32 until Load reads the file's dtype),
// query_pre_attn_scalar^-0.5 as the query scale (0 when it is head_dim),
// and Gemma 3's local rotary base in each of transformers' layouts.
func TestGemmaConfig(t *testing.T) {
	gemma2 := model.Config{Vocab: 256000, Context: 8192, DModel: 2304, Heads: 8, KVHeads: 4, HeadDim: 256, Layers: 26, MLP: true,
		DFF: 9216, Position: model.PositionRope, RopeBase: 10000, Norm: model.NormRMS, NormEps: 1e-6, NormOffset: true,
		NormPlacement: model.PlacementSandwich, Activation: model.ActivationGeGLU, MLPBias: model.FlagOff, TieEmbeddings: true,
		AttnSoftcap: 50, FinalSoftcap: 30, Window: 4096, GlobalLayers: model.NewLayerList(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25),
		EmbedScale: 48}
	with := func(c model.Config, edit func(*model.Config)) model.Config { edit(&c); return c }
	gemma3 := with(gemma2, func(c *model.Config) {
		c.Vocab, c.Context, c.QKNorm, c.AttnSoftcap, c.FinalSoftcap = 262208, 131072, true, 0, 0
		c.RopeBase, c.LocalRopeBase, c.GlobalLayers = 1e6, 1e4, model.NewLayerList(5, 11, 17, 23)
	})
	gemma3Small := with(gemma3, func(c *model.Config) {
		c.Vocab, c.Context, c.DModel, c.Heads, c.KVHeads, c.DFF, c.Window = 262144, 32768, 1152, 4, 1, 6912, 512
		c.EmbedScale = float64(float32(math.Sqrt(1152)))
	})
	for _, c := range []struct {
		name, class, modelType, keys string
		want                         model.Config
	}{
		{"gemma2 defaults", "Gemma2ForCausalLM", "gemma2", ``, gemma2},
		{"gemma2 27b's scalar", "Gemma2ForCausalLM", "gemma2", `"hidden_size": 4608, "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "query_pre_attn_scalar": 144`,
			with(gemma2, func(c *model.Config) {
				c.DModel, c.Heads, c.KVHeads, c.HeadDim, c.AttnScale, c.EmbedScale = 4608, 32, 16, 128, 1.0/12, float64(float32(math.Sqrt(4608)))
			})},
		{"gemma2 no caps, no window, untied", "Gemma2ForCausalLM", "gemma2",
			`"attn_logit_softcapping": null, "final_logit_softcapping": null, "sliding_window": null, "tie_word_embeddings": false, "hidden_act": "gelu"`,
			with(gemma2, func(c *model.Config) {
				c.AttnSoftcap, c.FinalSoftcap, c.Window, c.GlobalLayers, c.TieEmbeddings = 0, 0, 0, "", false
			})},
		{"gemma2 layer_types", "Gemma2ForCausalLM", "gemma2", `"num_hidden_layers": 3, "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]`,
			with(gemma2, func(c *model.Config) { c.Layers, c.GlobalLayers = 3, model.NewLayerList(0) })},
		{"gemma2 one layer, sliding", "Gemma2ForCausalLM", "gemma2", `"num_hidden_layers": 1`,
			with(gemma2, func(c *model.Config) { c.Layers, c.GlobalLayers = 1, "" })},
		{"gemma3 defaults", "Gemma3ForCausalLM", "gemma3_text", ``, gemma3},
		{"gemma-3-1b", "Gemma3ForCausalLM", "gemma3_text",
			`"vocab_size": 262144, "max_position_embeddings": 32768, "hidden_size": 1152, "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 6912, "sliding_window": 512, "sliding_window_pattern": 6, "rope_scaling": null, "rope_theta": 1000000, "rope_local_base_freq": 10000, "query_pre_attn_scalar": 256, "final_logit_softcapping": null, "attn_logit_softcapping": null`,
			gemma3Small},
		{"gemma3 linear on the global layers", "Gemma3ForCausalLM", "gemma3_text", `"rope_scaling": {"rope_type": "linear", "factor": 8.0}`,
			with(gemma3, func(c *model.Config) { c.RopeScaling, c.RopeFactor = "linear", 8 })},
		{"gemma3 pattern 2", "Gemma3ForCausalLM", "gemma3_text", `"num_hidden_layers": 4, "sliding_window_pattern": 2`,
			with(gemma3, func(c *model.Config) { c.Layers, c.GlobalLayers = 4, model.NewLayerList(1, 3) })},
		{"gemma3 every layer sliding: the local base", "Gemma3ForCausalLM", "gemma3_text", `"num_hidden_layers": 5, "rope_scaling": {"rope_type": "linear", "factor": 8.0}`,
			with(gemma3, func(c *model.Config) { c.Layers, c.GlobalLayers, c.RopeBase, c.LocalRopeBase = 5, "", 1e4, 0 })},
		{"gemma3 one base", "Gemma3ForCausalLM", "gemma3_text", `"rope_local_base_freq": 1000000`,
			with(gemma3, func(c *model.Config) { c.LocalRopeBase = 0 })},
		{"gemma3 rope_parameters per layer type", "Gemma3ForCausalLM", "gemma3_text",
			`"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}}`,
			with(gemma3, func(c *model.Config) { c.RopeScaling, c.RopeFactor, c.LocalRopeBase = "linear", 8, 2e4 })},
		{"gemma3 per layer type, thetas beside", "Gemma3ForCausalLM", "gemma3_text",
			`"rope_theta": 5e5, "rope_local_base_freq": 5e3, "rope_parameters": {"full_attention": {"rope_type": "default"}, "sliding_attention": null}`,
			with(gemma3, func(c *model.Config) { c.RopeBase, c.LocalRopeBase = 5e5, 5e3 })},
	} {
		checkConfig(t, c.name, c.class, c.modelType, c.keys, c.want)
	}
}

// TestEmbedScaleInDType: Gemma's normaliser sqrt(hidden_size) is the
// value PyTorch holds in the model's dtype: float32's, bfloat16's 4.90625
// for hidden 24 (sqrt 4.89898), float16's 4.8984375; a square hidden
// size is exact in each.
func TestEmbedScaleInDType(t *testing.T) {
	for _, c := range []struct {
		hidden int
		dtype  string
		want   float64
	}{
		{24, "F32", float64(float32(math.Sqrt(24)))}, {24, "BF16", 4.90625}, {24, "F16", 4.8984375},
		{2304, "BF16", 48}, {1152, "BF16", 34}, {3584, "BF16", 59.75},
	} {
		if got := inDType(math.Sqrt(float64(c.hidden)), c.dtype); got != c.want {
			t.Errorf("sqrt(%d) in %s = %v, want %v", c.hidden, c.dtype, got, c.want)
		}
	}
}

// TestGemma3VisionConfig: a Gemma3ForConditionalGeneration's config.json
// is read as its text_config, Gemma3TextConfig's defaults for the keys it
// leaves out (as the hub's files leave out most), with the eos_token_id
// of the top level; its vision_config only names the tensors skipped.
func TestGemma3VisionConfig(t *testing.T) {
	raw := configJSON("Gemma3ForConditionalGeneration", "gemma3", `"eos_token_id": [1, 106], "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text", "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}, "vision_config": {"num_hidden_layers": 27, "hidden_size": 1152}`)
	arch, cfg, specials, err := parseModelConfig(raw)
	if err != nil {
		t.Fatal(err)
	}
	var global []int
	for i := 5; i < 34; i += 6 {
		global = append(global, i)
	}
	want := model.Config{Vocab: 262208, Context: 131072, DModel: 2560, Heads: 8, KVHeads: 4, HeadDim: 256, Layers: 34, MLP: true,
		DFF: 10240, Position: model.PositionRope, RopeBase: 1e6, RopeScaling: "linear", RopeFactor: 8, LocalRopeBase: 1e4,
		Norm: model.NormRMS, NormEps: 1e-6, NormOffset: true, NormPlacement: model.PlacementSandwich, QKNorm: true,
		Activation: model.ActivationGeGLU, MLPBias: model.FlagOff, TieEmbeddings: true, Window: 1024,
		GlobalLayers: model.NewLayerList(global...), EmbedScale: float64(float32(math.Sqrt(2560)))}
	if cfg != want {
		t.Errorf("config %+v\nwant %+v", cfg, want)
	}
	if specials.BOS != 2 || len(specials.EOS) != 2 || specials.EOS[1] != 106 {
		t.Errorf("specials %+v, want BOS 2 and EOS [1 106]", specials)
	}
	names := arch.tensors(cfg)
	for _, name := range []string{"language_model.model.layers.33.post_feedforward_layernorm.weight",
		"vision_tower.vision_model.encoder.layers.26.mlp.fc2.bias", "multi_modal_projector.mm_input_projection_weight"} {
		if _, ok := names[name]; !ok {
			t.Errorf("no name %s", name)
		}
	}
	if _, ok := names["vision_tower.vision_model.encoder.layers.27.mlp.fc2.bias"]; ok {
		t.Error("a vision layer past vision_config's 27")
	}
}

// TestModernSpecials: the special tokens each new config class gives when
// config.json leaves them out: Gemma's BOS 2 and EOS 1, none for Qwen 3.
func TestModernSpecials(t *testing.T) {
	for _, c := range []struct {
		class, modelType, keys string
		bos                    int
		eos                    []int
	}{
		{"Qwen3ForCausalLM", "qwen3", `"vocab_size": 100`, -1, nil},
		{"Gemma2ForCausalLM", "gemma2", `"vocab_size": 100`, 2, []int{1}},
		{"Gemma3ForCausalLM", "gemma3_text", `"vocab_size": 100`, 2, []int{1}},
		{"Gemma3ForConditionalGeneration", "gemma3", `"text_config": {"vocab_size": 100}`, 2, []int{1}},
	} {
		_, _, got, err := parseModelConfig(configJSON(c.class, c.modelType, c.keys))
		if err != nil || got.BOS != c.bos || !slices.Equal(got.EOS, c.eos) {
			t.Errorf("%s: %+v (%v), want BOS %d and EOS %v", c.class, got, err, c.bos, c.eos)
		}
	}
}
