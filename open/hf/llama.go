package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// llamaFamily is what sets LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM and Qwen3ForCausalLM apart: one block (RMSNorm, rotary
// attention with grouped-query heads, a SwiGLU MLP), with each config
// class's defaults, biases, sliding windows and QK-norm.
type llamaFamily struct {
	// The config class's defaults for the sizes config.json leaves out;
	// kvHeads 0 is num_attention_heads, headDim 0 hidden_size /
	// num_attention_heads.
	vocab, intermediate, kvHeads, positions, headDim int
	// biases are the q/k/v, o and MLP biases the config asks for.
	biases func(keys configKeys) (qkv, out, mlp bool, err error)
	// window is the sliding window of the layers that have one, and the
	// layers without (model.Config.Window and GlobalLayers).
	window func(keys configKeys, layers int) (int, model.LayerList, error)
	// qkNorm: an RMSNorm on each head's q and k before the rotary
	// positions (Qwen 3's q_norm and k_norm).
	qkNorm bool
}

var (
	llamaDefaults   = llamaFamily{vocab: 32000, intermediate: 11008, positions: 2048, biases: llamaBiases, window: noWindow}
	mistralDefaults = llamaFamily{vocab: 32000, intermediate: 14336, kvHeads: 8, positions: 4096 * 32, biases: noBiases, window: mistralWindow}
	qwen2Defaults   = llamaFamily{vocab: 151936, intermediate: 22016, kvHeads: 32, positions: 32768, biases: qwen2Biases, window: qwenWindow}
	qwen3Defaults   = llamaFamily{vocab: 151936, intermediate: 22016, kvHeads: 32, positions: 32768, headDim: 128,
		biases: attentionBiases, window: qwenWindow, qkNorm: true}
)

// config maps the config.json of a model of the family to a model.Config.
func (f llamaFamily) config(keys configKeys) (model.Config, error) {
	cfg := model.Config{MLP: true, Norm: model.NormRMS, Activation: model.ActivationSwiGLU, Position: model.PositionRope, QKNorm: f.qkNorm}
	var err error
	if err := readSizes(keys, &cfg, f.vocab, 4096, f.intermediate, 32, 32, f.positions); err != nil {
		return model.Config{}, err
	}
	if err := headShape(keys, &cfg, f.headDim, f.kvHeads); err != nil {
		return model.Config{}, err
	}
	if err := llamaActivation(keys); err != nil {
		return model.Config{}, err
	}
	if cfg.NormEps, err = llamaEps(keys); err != nil {
		return model.Config{}, err
	}
	rope, err := readRope(keys, model.DefaultRopeBase)
	if err != nil {
		return model.Config{}, err
	}
	rope.apply(&cfg)
	if cfg.TieEmbeddings, err = keys.boolean("tie_word_embeddings", false); err != nil {
		return model.Config{}, err
	}
	var qkv, out, mlp bool
	if qkv, out, mlp, err = f.biases(keys); err != nil {
		return model.Config{}, err
	}
	cfg.QKVBias, cfg.OutBias, cfg.MLPBias = qkv, out, flag(mlp)
	if cfg.Window, cfg.GlobalLayers, err = f.window(keys, cfg.Layers); err != nil {
		return model.Config{}, err
	}
	if err := cfg.Validate(); err != nil {
		return model.Config{}, errors.Wrap(err, "the model it describes")
	}
	return cfg, nil
}

// readSizes reads the sizes every Llama-like config.json gives, each
// default the config class's.
func readSizes(keys configKeys, cfg *model.Config, vocab, hidden, intermediate, layers, heads, positions int) error {
	return readSizeKeys([]sizeKey{
		{"vocab_size", vocab, &cfg.Vocab, keys.size}, {"hidden_size", hidden, &cfg.DModel, keys.size},
		{"intermediate_size", intermediate, &cfg.DFF, keys.size}, {"num_hidden_layers", layers, &cfg.Layers, keys.layerCount},
		{"num_attention_heads", heads, &cfg.Heads, keys.headCount}, {"max_position_embeddings", positions, &cfg.Context, keys.size},
	})
}

func flag(on bool) model.Flag {
	if on {
		return model.FlagOn
	}
	return model.FlagOff
}

// headShape sets cfg's head width (model.Config.HeadDim, 0 when it is
// hidden_size / num_attention_heads) and key/value heads (KVHeads, 0 when
// they are the query heads). head_dim is defHeadDim when absent, and
// hidden_size / num_attention_heads when that is 0 or head_dim is null;
// num_key_value_heads is defKV, num_attention_heads when that is 0 or the
// key is null.
func headShape(keys configKeys, cfg *model.Config, defHeadDim, defKV int) error {
	headDim := defHeadDim
	if keys.present("head_dim") {
		var err error
		if headDim, err = keys.size("head_dim", 0); err != nil {
			return err
		}
	} else if defHeadDim == 0 || keys.null("head_dim") {
		if cfg.DModel%cfg.Heads != 0 {
			return errors.Errorf("hidden_size = %d is not divisible by num_attention_heads = %d (and head_dim is not given)", cfg.DModel, cfg.Heads)
		}
		headDim = cfg.DModel / cfg.Heads
	}
	if cfg.DModel%cfg.Heads != 0 || headDim != cfg.DModel/cfg.Heads {
		cfg.HeadDim = headDim
	}
	if defKV == 0 || keys.null("num_key_value_heads") {
		defKV = cfg.Heads
	}
	kv, err := keys.size("num_key_value_heads", defKV)
	if err != nil {
		return err
	}
	if cfg.Heads%kv != 0 {
		return errors.Errorf("num_key_value_heads = %d does not divide num_attention_heads = %d", kv, cfg.Heads)
	}
	if kv != cfg.Heads {
		cfg.KVHeads = kv
	}
	return nil
}

// llamaActivation refuses an MLP activation other than SiLU, the one
// SwiGLU is built with.
func llamaActivation(keys configKeys) error {
	act, err := keys.str("hidden_act", "silu")
	if err != nil {
		return err
	}
	if act != "silu" {
		return errors.Errorf("hidden_act = %s: not supported; supported: silu", msg.Quote(act))
	}
	return nil
}

// llamaEps is rms_norm_eps (default 1e-6) as model.Config.NormEps holds it:
// 0 for model.DefaultNormEps.
func llamaEps(keys configKeys) (float64, error) { return normEps(keys, "rms_norm_eps", 1e-6) }

// llamaBiases: LlamaConfig's attention_bias puts biases on q, k, v and o;
// mlp_bias on gate, up and down.
func llamaBiases(keys configKeys) (qkv, out, mlp bool, err error) {
	if qkv, err = keys.boolean("attention_bias", false); err != nil {
		return false, false, false, err
	}
	if mlp, err = keys.boolean("mlp_bias", false); err != nil {
		return false, false, false, err
	}
	return qkv, qkv, mlp, nil
}

// noBiases: Mistral's Linears have none.
func noBiases(configKeys) (qkv, out, mlp bool, err error) { return false, false, false, nil }

// qwen2Biases: Qwen 2's q, k and v have biases, o and the MLP none.
func qwen2Biases(configKeys) (qkv, out, mlp bool, err error) { return true, false, false, nil }

// attentionBiases: attention_bias (Qwen 3's, Gemma's) puts biases on q, k,
// v and o; the MLP has none.
func attentionBiases(keys configKeys) (qkv, out, mlp bool, err error) {
	qkv, err = keys.boolean("attention_bias", false)
	return qkv, qkv, false, err
}

// noWindow: Llama attends to every earlier token.
func noWindow(configKeys, int) (int, model.LayerList, error) { return 0, "", nil }

// mistralWindow is MistralConfig's sliding_window (4096 when absent, none
// when null), on every layer. transformers' mask lets query i see key j
// when i - sliding_window < j <= i: sliding_window keys, the query's own
// included, which is model.Config.Window exactly.
func mistralWindow(keys configKeys, _ int) (int, model.LayerList, error) {
	width, err := keys.sizeOrNull("sliding_window", 4096)
	return width, "", err
}

// qwenWindow is Qwen 2's and Qwen 3's sliding window: none unless
// use_sliding_window, then sliding_window (default 4096) on the layers
// layer_types names "sliding_attention" (by default those from
// max_window_layers on); the others attend to every earlier token.
func qwenWindow(keys configKeys, layers int) (int, model.LayerList, error) {
	use, err := keys.boolean("use_sliding_window", false)
	if err != nil {
		return 0, "", err
	}
	width := 0
	if use {
		if width, err = keys.sizeOrNull("sliding_window", 4096); err != nil {
			return 0, "", err
		}
	}
	first := layers // without a window, no layer slides by the rule
	if width > 0 && !keys.present("layer_types") {
		if first, err = keys.count("max_window_layers", 28); err != nil {
			return 0, "", err
		}
	}
	sliding, err := slidingLayers(keys, layers, func(i int) bool { return i >= first })
	if err != nil {
		return 0, "", err
	}
	if width == 0 && count(sliding) > 0 {
		return 0, "", errors.Errorf("layer_types = %s names sliding_attention layers, but use_sliding_window = false (or sliding_window = null) gives them no window",
			shown(keys["layer_types"]))
	}
	window, global := layerWindows(sliding, width)
	return window, global, nil
}

// llamaBlock maps the names of decoder layer i (under "model.") to the
// project's: q_proj, k_proj and v_proj fill the rows of the fused qkv,
// [q (heads) | k (kv heads) | v (kv heads)], in that order.
func llamaBlock(cfg model.Config, i int) map[string]target {
	hf, own := fmt.Sprintf("model.layers.%d.", i), fmt.Sprintf("blocks.%d.", i)
	q, kv := cfg.Heads*cfg.DHead(), cfg.KVHeadCount()*cfg.DHead()
	parts := []struct {
		name string
		rows rows
	}{{"q_proj", rows{0, q}}, {"k_proj", rows{q, kv}}, {"v_proj", rows{q + kv, kv}}}
	names := map[string]target{
		// The rotary frequencies, a buffer files written before
		// transformers 4.31 hold in every layer.
		hf + "self_attn.rotary_emb.inv_freq":   {},
		hf + "input_layernorm.weight":          {param: own + "ln1.weight"},
		hf + "post_attention_layernorm.weight": {param: own + "ln2.weight"},
		hf + "self_attn.o_proj.weight":         {param: own + "attn.out.weight"},
	}
	for _, p := range parts {
		names[hf+"self_attn."+p.name+".weight"] = target{param: own + "attn.qkv.weight", part: p.rows}
		if cfg.QKVBias {
			names[hf+"self_attn."+p.name+".bias"] = target{param: own + "attn.qkv.bias", part: p.rows}
		}
	}
	if cfg.OutBias {
		names[hf+"self_attn.o_proj.bias"] = target{param: own + "attn.out.bias"}
	}
	if cfg.QKNorm {
		names[hf+"self_attn.q_norm.weight"] = target{param: own + "attn.q_norm.weight"}
		names[hf+"self_attn.k_norm.weight"] = target{param: own + "attn.k_norm.weight"}
	}
	for _, m := range []string{"gate", "up", "down"} {
		names[hf+"mlp."+m+"_proj.weight"] = target{param: own + "mlp." + m + ".weight"}
		if cfg.MLPBias.On() {
			names[hf+"mlp."+m+"_proj.bias"] = target{param: own + "mlp." + m + ".bias"}
		}
	}
	return names
}

// llamaTensors lists the names a file of the family may hold; the head is
// ignored when tied to the embedding (transformers then uses the
// embedding, and save_pretrained leaves it out).
func llamaTensors(cfg model.Config) map[string]target {
	names := map[string]target{
		"model.embed_tokens.weight": {param: "tok_emb.weight"},
		"model.norm.weight":         {param: "ln_f.weight"},
		"lm_head.weight":            {param: "lm_head.weight"},
	}
	if cfg.TieEmbeddings {
		names["lm_head.weight"] = target{ignoredShape: []int{cfg.Vocab, cfg.DModel}}
	}
	for i := range cfg.Layers {
		for k, v := range llamaBlock(cfg, i) {
			names[k] = v
		}
	}
	return names
}

func llamaSizes(cfg model.Config) string {
	sizes := fmt.Sprintf("config.json has vocab_size %d, hidden_size %d, intermediate_size %d, num_hidden_layers %d, num_attention_heads %d, num_key_value_heads %d",
		cfg.Vocab, cfg.DModel, cfg.DFF, cfg.Layers, cfg.Heads, cfg.KVHeadCount())
	if cfg.HeadDim != 0 {
		sizes += fmt.Sprintf(", head_dim %d", cfg.HeadDim)
	}
	return sizes
}
