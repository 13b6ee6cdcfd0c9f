package hf_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/open/hf"
)

// TestModernRefuses: what Llama 3.x, Qwen 3 and Gemma directories may ask
// for that is not built is refused with one line naming config.json and
// the key: the rotary scalings other than linear and llama3, a scaling
// missing its keys or scaling twice, scaled positions on Gemma 3's sliding
// layers, a layer type transformers does not write, a bidirectional or
// non-tanh Gemma, a Gemma 3 vision model's text_config or vision tower
// off what it reads; and a fixture's weights that disagree with its
// head_dim or lack Qwen 3's q_norm.
func TestModernRefuses(t *testing.T) {
	llama3 := map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
	without := func(key string) map[string]any {
		d := map[string]any{}
		for k, v := range llama3 {
			if k != key {
				d[k] = v
			}
		}
		return d
	}
	for _, c := range []struct {
		name, variant string
		edit          func(t *testing.T, dir string)
		file, want    string
	}{
		{"yarn", "llama3", configSets("rope_scaling", map[string]any{"rope_type": "yarn", "factor": 4.0}),
			hf.ConfigFile, `rope_scaling.rope_type = "yarn": not built; built: default, linear, llama3`},
		{"llama3 without its original context", "llama3", configSets("rope_scaling", without("original_max_position_embeddings")),
			hf.ConfigFile, `rope_scaling: rope_type "llama3" needs original_max_position_embeddings`},
		{"llama3 without a factor", "llama3", configSets("rope_scaling", without("factor")),
			hf.ConfigFile, `rope_scaling: rope_type "llama3" needs factor`},
		{"llama3 frequencies the wrong way", "llama3", configSets("rope_scaling", map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 32}),
			hf.ConfigFile, `rope_scaling: high_freq_factor = 1: want more than low_freq_factor = 4`},
		{"linear factor 0", "llama_linear", configSets("rope_parameters", map[string]any{"rope_type": "linear", "factor": 0, "rope_theta": 1000.0}),
			hf.ConfigFile, `rope_parameters: factor = 0: want a number > 0`},
		{"scaled two ways", "llama3", configSets("rope_parameters", map[string]any{"rope_type": "linear", "factor": 2.0}),
			hf.ConfigFile, `rope_parameters.rope_type = "linear": scales the rotary positions otherwise than rope_scaling does`},
		{"qwen3 partial rotary", "qwen3", configSets("partial_rotary_factor", 0.5),
			hf.ConfigFile, `partial_rotary_factor = 0.5: not built`},
		{"gemma3 sliding layers scaled", "gemma3_types", configSets("rope_parameters", map[string]any{
			"full_attention": map[string]any{"rope_type": "default", "rope_theta": 1e6}, "sliding_attention": map[string]any{"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}),
			hf.ConfigFile, `rope_parameters.sliding_attention.rope_type = "linear": not built; the sliding layers' rotary positions are unscaled`},
		{"gemma3 dynamic on the global layers", "gemma3", configSets("rope_scaling", map[string]any{"rope_type": "dynamic", "factor": 2.0}),
			hf.ConfigFile, `rope_scaling.rope_type = "dynamic": not built`},
		{"gemma3 rope_parameters of another layer type", "gemma3_types", configSets("rope_parameters", map[string]any{"chunked_attention": map[string]any{"rope_type": "default"}}),
			hf.ConfigFile, `rope_parameters.chunked_attention: not a layer type; want full_attention or sliding_attention`},
		{"gemma3 layer_types too short", "gemma3_types", configSets("layer_types", []string{"full_attention"}),
			hf.ConfigFile, `layer_types = ["full_attention"]: want a list of 3 strings (num_hidden_layers)`},
		{"gemma3 local layers without a window", "gemma3", configSets("sliding_window", nil),
			hf.ConfigFile, `sliding_window = null: the sliding_attention layers' own rotary positions are built only with a window`},
		{"gemma3 sliding_window_pattern 0", "gemma3", configSets("sliding_window_pattern", 0),
			hf.ConfigFile, `sliding_window_pattern = 0: want a positive integer`},
		{"gemma2 exact gelu", "gemma2", configSets("hidden_activation", "gelu"),
			hf.ConfigFile, `hidden_activation = "gelu": not supported; supported: gelu_fast, gelu_new, gelu_pytorch_tanh`},
		{"gemma2 bidirectional", "gemma2", configSets("use_bidirectional_attention", true),
			hf.ConfigFile, `use_bidirectional_attention = true: not supported; the model's attention is causal`},
		{"gemma2 a negative cap", "gemma2", configSets("final_logit_softcapping", -30),
			hf.ConfigFile, `final_logit_softcapping = -30: want a number > 0, or null for none`},
		{"gemma3 a cap of 0", "gemma3", configSets("attn_logit_softcapping", 0),
			hf.ConfigFile, `attn_logit_softcapping = 0: want a number > 0, or null for none`},
		{"gemma2 query_pre_attn_scalar 0", "gemma2", configSets("query_pre_attn_scalar", 0),
			hf.ConfigFile, `query_pre_attn_scalar = 0: want a number > 0`},
		{"a vision model's text_config of another model", "gemma3_vlm", func(t *testing.T, d string) {
			editConfig(t, d, func(c map[string]any) { c["text_config"].(map[string]any)["model_type"] = "gemma2" })
		}, hf.ConfigFile, `text_config.model_type = "gemma2": want gemma3_text`},
		{"a vision model's text_config key", "gemma3_vlm", func(t *testing.T, d string) {
			editConfig(t, d, func(c map[string]any) { c["text_config"].(map[string]any)["sliding_window_pattern"] = 0 })
		}, hf.ConfigFile, `text_config: sliding_window_pattern = 0: want a positive integer`},
		{"a vision tower of no layers", "gemma3_vlm", func(t *testing.T, d string) {
			editConfig(t, d, func(c map[string]any) { c["vision_config"].(map[string]any)["num_hidden_layers"] = 0 })
		}, hf.ConfigFile, `vision_config: num_hidden_layers = 0: want a positive integer`},
		{"a vision tower of more layers than vision_config's", "gemma3_vlm", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "vision_tower.vision_model.encoder.layers.0.mlp.fc2.bias", "vision_tower.vision_model.encoder.layers.1.mlp.fc2.bias")
		}, single, `unexpected tensor "vision_tower.vision_model.encoder.layers.1.mlp.fc2.bias"`},
		{"a vision tower tensor not SigLIP's", "gemma3_vlm", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "vision_tower.vision_model.post_layernorm.bias", "vision_tower.vision_model.head.probe")
		}, single, `unexpected tensor "vision_tower.vision_model.head.probe"`},
		{"gemma3 of model_type gemma3", "gemma3", configSets("model_type", "gemma3"),
			hf.ConfigFile, `architectures[0] = "Gemma3ForCausalLM", model_type = "gemma3": not supported`},
		{"head_dim the weights do not have", "qwen3", configSets("head_dim", 8),
			single, `tensor "model.layers.0.self_attn.q_proj.weight" has shape [24 16], want [16 16]`},
		{"qwen3 without q_norm", "qwen3", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "model.layers.1.self_attn.q_norm.weight", "model.layers.1.self_attn.rotary_emb.inv_freq")
		}, single, `holds no tensor "model.layers.1.self_attn.q_norm.weight"`},
		{"gemma2 without a post-norm", "gemma2", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "model.layers.0.post_feedforward_layernorm.weight", "model.layers.0.mlp.act.weight")
		}, single, `unexpected tensor "model.layers.0.mlp.act.weight"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyVariant(t, c.variant)
			c.edit(t, dir)
			_, err := hf.Load(dir, hf.Options{})
			if err == nil {
				t.Fatal("loaded")
			}
			text, file := err.Error(), filepath.Join(dir, c.file)
			if strings.Contains(text, "\n") || !strings.HasPrefix(text, file+":") || !strings.Contains(text, c.want) {
				t.Errorf("error %q\nwant one line starting %q and saying %q", text, file+":", c.want)
			}
		})
	}
}
