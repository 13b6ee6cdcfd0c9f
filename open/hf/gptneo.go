package hf

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// gptNeoConfig maps a GPTNeoForCausalLM's config.json (the TinyStories
// models, GPT-Neo 125M to 2.7B) to a model.Config, with GPTNeoConfig's
// defaults for absent keys: GPT-2's block with learned positions, q, k
// and v without biases, unscaled scores (GPTNeoSelfAttention._attn does
// not divide by sqrt(d)), the layers attention_types names "local"
// windowed to window_size keys, and a head tied to wte.
func gptNeoConfig(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, OutBias: true, Position: model.PositionLearned, Norm: model.NormLayer, AttnScale: 1}
	if err := readSizeKeys([]sizeKey{
		{"vocab_size", 50257, &cfg.Vocab, keys.size}, {"hidden_size", 2048, &cfg.DModel, keys.size},
		{"num_layers", 24, &cfg.Layers, keys.layerCount}, {"num_heads", 16, &cfg.Heads, keys.headCount},
		{"max_position_embeddings", 2048, &cfg.Context, keys.size},
	}); err != nil {
		return model.Config{}, err
	}
	if cfg.DModel%cfg.Heads != 0 {
		return model.Config{}, errors.Errorf("hidden_size = %d is not divisible by num_heads = %d", cfg.DModel, cfg.Heads)
	}
	var err error
	// intermediate_size None (absent or null) is 4·hidden_size.
	if cfg.DFF, err = keys.sizeOrNull("intermediate_size", 0); err != nil {
		return model.Config{}, err
	}
	if cfg.DFF == 0 {
		cfg.DFF = 4 * cfg.DModel
	}
	if cfg.Activation, err = geluActivation(keys, "activation_function", "gelu_new"); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = normEps(keys, "layer_norm_epsilon", 1e-5); err != nil {
		return model.Config{}, err
	}
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", true); err != nil {
		return model.Config{}, err
	}
	local, err := gptNeoLayers(keys, cfg.Layers)
	if err != nil {
		return model.Config{}, err
	}
	if slices.Contains(local, true) {
		if cfg.Window, err = keys.size("window_size", 256); err != nil {
			return model.Config{}, err
		}
		cfg.GlobalLayers = model.NewLayerList(globalLayers(local)...)
	}
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// globalLayers are the layers local does not window; none when every
// layer is windowed.
func globalLayers(local []bool) []int {
	var out []int
	for i, l := range local {
		if !l {
			out = append(out, i)
		}
	}
	return out
}

// gptNeoLayers says which of the layers are local: GPTNeoConfig's
// attention_layers, attention_types expanded (expand_attention_types_params:
// each [[kinds...], n] repeats kinds n times), one "global" or "local" per
// layer. A config.json that also lists attention_layers (transformers
// writes both) must list the same.
func gptNeoLayers(keys configKeys, layers int) ([]bool, error) {
	types := json.RawMessage(`[[["global","local"],12]]`) // GPTNeoConfig's default
	if keys.present("attention_types") {
		types = keys["attention_types"]
	}
	kinds, err := expandAttentionTypes(types)
	if err != nil {
		return nil, keys.wrongValue("attention_types", `a list of [[kinds...], count] with kinds "global" or "local"`)
	}
	if len(kinds) != layers {
		return nil, errors.Errorf("attention_types = %s gives %d layers; num_layers = %d", shown(types), len(kinds), layers)
	}
	if keys.present("attention_layers") {
		var listed []string
		if err := jsonStrings(keys["attention_layers"], &listed); err != nil || !slices.Equal(listed, kinds) {
			return nil, errors.Errorf("attention_layers = %s: not the attention_types expanded, %s", shown(keys["attention_layers"]), msg.Shorten(fmt.Sprint(kinds)))
		}
	}
	local := make([]bool, layers)
	for i, k := range kinds {
		switch k {
		case "local":
			local[i] = true
		case "global":
		default:
			return nil, errors.Errorf("attention_types: layer kind %s: not supported; supported: global, local", msg.Quote(k))
		}
	}
	return local, nil
}

// expandAttentionTypes expands GPT-Neo's attention_types, refusing counts
// past maxLayers before repeating them.
func expandAttentionTypes(raw json.RawMessage) ([]string, error) {
	var groups [][2]json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, err
	}
	var kinds []string
	for _, g := range groups {
		var names []string
		var n int
		if err := json.Unmarshal(g[0], &names); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(g[1], &n); err != nil || n < 0 || len(names) > 0 && n > (maxLayers-len(kinds))/len(names) {
			return nil, errors.New("bad count")
		}
		for range n {
			kinds = append(kinds, names...)
		}
	}
	return kinds, nil
}

// gptNeoBlock maps the names of block i under GPTNeoModel to the
// project's: q_proj, k_proj and v_proj (nn.Linear, (out, in)) fill the
// rows of the fused qkv.
func gptNeoBlock(cfg model.Config, i int) map[string]target {
	hf, own := fmt.Sprintf("h.%d.", i), fmt.Sprintf("blocks.%d.", i)
	d := cfg.DModel
	names := map[string]target{
		// Buffers files written by older transformers hold: the layer's
		// causal (or local) mask and its fill value.
		hf + "attn.attention.bias":          {},
		hf + "attn.attention.masked_bias":   {},
		hf + "attn.attention.q_proj.weight": {param: own + "attn.qkv.weight", part: rows{0, d}},
		hf + "attn.attention.k_proj.weight": {param: own + "attn.qkv.weight", part: rows{d, d}},
		hf + "attn.attention.v_proj.weight": {param: own + "attn.qkv.weight", part: rows{2 * d, d}},
	}
	for _, p := range [][2]string{
		{"ln_1", "ln1"}, {"ln_2", "ln2"}, {"attn.attention.out_proj", "attn.out"}, {"mlp.c_fc", "mlp.fc"}, {"mlp.c_proj", "mlp.proj"},
	} {
		names[hf+p[0]+".weight"] = target{param: own + p[1] + ".weight"}
		names[hf+p[0]+".bias"] = target{param: own + p[1] + ".bias"}
	}
	return names
}

// gptNeoTensors lists the names a GPTNeoForCausalLM's files may hold.
func gptNeoTensors(cfg model.Config) map[string]target {
	return gpt2LayoutTensors(cfg, func(i int) map[string]target { return gptNeoBlock(cfg, i) })
}

func gptNeoSizes(cfg model.Config) string {
	return fmt.Sprintf("config.json has vocab_size %d, max_position_embeddings %d, hidden_size %d, intermediate_size %d, num_layers %d, num_heads %d",
		cfg.Vocab, cfg.Context, cfg.DModel, cfg.DFF, cfg.Layers, cfg.Heads)
}
