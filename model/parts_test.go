package model

import (
	"slices"
	"strings"
	"testing"
)

// TestPartsValidation: an unknown norm or activation, a norm_bias with
// rmsnorm, a norm_eps out of range, QK-norm with a latent, and a block
// part set on attention-only blocks are each one line naming the key, the
// value and what is allowed.
func TestPartsValidation(t *testing.T) {
	full := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, MLP: true, DFF: 32}
	for _, c := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"unknown norm", func(c *Config) { c.Norm = "batchnorm" }, `model.norm = "batchnorm": want one of layernorm, rmsnorm`},
		{"unknown activation", func(c *Config) { c.Activation = "tanh" }, `model.activation = "tanh": want one of gelu_tanh, gelu, swiglu, relu2`},
		{"another library's norm", func(c *Config) { c.Norm = "RMSNorm" }, `model.norm = "RMSNorm": want one of layernorm, rmsnorm; did you mean rmsnorm?`},
		{"another library's activation", func(c *Config) { c.Activation = "gelu_new" }, `model.activation = "gelu_new": want one of gelu_tanh, gelu, swiglu, relu2, geglu; did you mean gelu_tanh?`},
		{"norm_bias with rmsnorm", func(c *Config) { c.Norm, c.NormBias = NormRMS, FlagOff }, "model.norm_bias = false: only model.norm = layernorm has a bias to turn off; rmsnorm has none"},
		{"norm_bias true with rmsnorm", func(c *Config) { c.Norm, c.NormBias = NormRMS, FlagOn }, "model.norm_bias = true: only model.norm = layernorm"},
		{"negative norm_eps", func(c *Config) { c.NormEps = -1 }, "model.norm_eps = -1: must be in (0, 1)"},
		{"qk_norm with a latent", func(c *Config) { c.QKNorm, c.KVLatent = true, 4 }, "model.qk_norm = true with model.kv_latent = 4: QK-norm of a latent's keys is not built"},
		{"rmsnorm without blocks", func(c *Config) { c.MLP, c.DFF, c.Norm = false, 0, NormRMS }, `model.norm = "rmsnorm": attention-only blocks have no norm or MLP; set model.mlp: true`},
		{"swiglu without blocks", func(c *Config) { c.MLP, c.DFF, c.Activation = false, 0, ActivationSwiGLU }, `model.activation = "swiglu": attention-only blocks`},
		{"mlp_bias without blocks", func(c *Config) { c.MLP, c.DFF, c.MLPBias = false, 0, FlagOff }, "model.mlp_bias = false: attention-only blocks"},
	} {
		cfg := full
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
	}
	for _, ok := range []func(c *Config){
		func(c *Config) {
			c.Norm, c.Activation, c.MLPBias, c.TieEmbeddings, c.QKNorm = NormRMS, ActivationSwiGLU, FlagOff, true, true
		},
		func(c *Config) { c.NormBias, c.Activation = FlagOff, ActivationGELU },
		func(c *Config) { c.MLP, c.DFF, c.QKNorm, c.TieEmbeddings = false, 0, true, true },
	} {
		cfg := full
		ok(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

// TestPartsParamSpecs: each part names its tensors as docs/model.md
// says: no norm bias with rmsnorm or norm_bias false, SwiGLU's gate, up
// and down, no MLP bias with mlp_bias false, QK-norm weights of d per
// layer, and no lm_head.weight when the head is tied.
func TestPartsParamSpecs(t *testing.T) {
	base := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, MLP: true, DFF: 24}
	names := func(c Config) []string {
		var out []string
		for _, s := range c.ParamSpecs() {
			out = append(out, s.Name)
		}
		return out
	}
	llama := base
	llama.Norm, llama.Activation, llama.MLPBias, llama.TieEmbeddings, llama.QKNorm = NormRMS, ActivationSwiGLU, FlagOff, true, true
	want := []string{"tok_emb.weight", "pos_emb.weight", "blocks.0.ln1.weight", "blocks.0.attn.qkv.weight",
		"blocks.0.attn.q_norm.weight", "blocks.0.attn.k_norm.weight", "blocks.0.attn.out.weight", "blocks.0.ln2.weight",
		"blocks.0.mlp.gate.weight", "blocks.0.mlp.up.weight", "blocks.0.mlp.down.weight", "ln_f.weight"}
	if got := names(llama); !slices.Equal(got, want) {
		t.Errorf("Llama-style block: %q, want %q", got, want)
	}
	for _, s := range llama.ParamSpecs() {
		if strings.HasSuffix(s.Name, "_norm.weight") && (len(s.Shape) != 1 || s.Shape[0] != 4 || s.Init != InitOnes) {
			t.Errorf("%s: %v %v, want (4) ones", s.Name, s.Shape, s.Init)
		}
	}
	nano := base
	nano.NormBias, nano.Activation, nano.TieEmbeddings = FlagOff, ActivationGELU, true
	for _, name := range names(nano) {
		if strings.HasSuffix(name, "ln1.bias") || name == "ln_f.bias" || name == "lm_head.weight" {
			t.Errorf("nanoGPT-style block holds %s", name)
		}
	}
	if !slices.Contains(names(nano), "blocks.0.mlp.fc.bias") {
		t.Error("the nanoGPT-style block lost its MLP bias")
	}
	swiglu := base
	swiglu.Activation, swiglu.DModel = ActivationSwiGLU, 128
	if got := swiglu.DefaultDFF(); got != 352 {
		t.Errorf("SwiGLU's default d_ff at D 128 is %d, want 352 (2/3 of 512, up to a multiple of 32)", got)
	}
}

// normConfigs are the norms other than GPT-2's LayerNorm, as edits of a
// config with full blocks, by name, each at an epsilon of its own so that
// a graph ignoring model.norm_eps would differ from the reference.
var normConfigs = map[string]func(*Config){
	"rmsnorm":                func(c *Config) { c.Norm, c.NormEps = NormRMS, 1e-6 },
	"layernorm without bias": func(c *Config) { c.NormBias, c.NormEps = FlagOff, 1e-3 },
}

// TestBlocks: the model card's words for the blocks name each part that is
// not GPT-2's, and nothing for GPT-2's own.
func TestBlocks(t *testing.T) {
	base := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) {}, "attention-only blocks"},
		{func(c *Config) { c.QKNorm, c.TieEmbeddings = true, true }, "attention-only blocks, QK-norm, tied embeddings"},
		{func(c *Config) { c.MLP = true }, "pre-LN blocks with MLP"},
		{func(c *Config) {
			c.MLP, c.NormBias, c.Activation, c.TieEmbeddings = true, FlagOff, ActivationGELU, true
		},
			"pre-LN blocks with MLP (LayerNorm without bias, exact GELU), tied embeddings"},
		{func(c *Config) {
			c.MLP, c.Norm, c.NormEps, c.Activation, c.MLPBias, c.QKNorm = true, NormRMS, 1e-6, ActivationSwiGLU, FlagOff, true
		}, "pre-RMSNorm blocks with MLP (norm eps 1e-06, SwiGLU, no MLP biases), QK-norm"},
		{func(c *Config) { c.MLP, c.Activation = true, ActivationReLU2 }, "pre-LN blocks with MLP (ReLU²)"},
	} {
		cfg := base
		c.edit(&cfg)
		if got := cfg.Blocks(); got != c.want {
			t.Errorf("%+v: Blocks() = %q, want %q", cfg, got, c.want)
		}
	}
}
