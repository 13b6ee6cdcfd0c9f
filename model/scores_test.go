package model

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// scoreParts are the scores', logits' and embeddings' parts, each alone as
// edits of a config with full blocks, for the tests' tables. The caps are
// small enough that tanh bends the random models' scores and logits, and
// the scaled embeddings go with a tied head, which must read them unscaled.
var scoreParts = map[string]func(*Config){
	"attn_scale":       func(c *Config) { c.AttnScale = 0.3 },
	"unscaled":         func(c *Config) { c.AttnScale = 1 }, // GPT-Neo's
	"attn_softcap":     func(c *Config) { c.AttnSoftcap = 1.5 },
	"final_softcap":    func(c *Config) { c.FinalSoftcap = 2 },
	"embed_scale+tied": func(c *Config) { c.EmbedScale, c.TieEmbeddings = 2.5, true },
}

// gemma2 is c with every part of this file at once, as Gemma 2 has them:
// GeGLU, a scale of its own, both soft-caps, scaled embeddings and a tied
// head, on rope.
func gemma2(c Config) Config {
	c.MLP, c.Activation, c.MLPBias, c.Position = true, ActivationGeGLU, FlagOff, PositionRope
	c.AttnScale, c.AttnSoftcap, c.FinalSoftcap, c.EmbedScale, c.TieEmbeddings = 0.4, 1.5, 2, 2.5, true
	return c
}

// scoreVariants are the decoder's and the reference's variants of these
// parts: each of scoreParts on rope with full blocks, Gemma 2's whole set
// with grouped-query heads and a window, and a soft-cap on latent
// attention (whose decoding step caps on either path outside
// ops.CacheAttention).
func scoreVariants(out map[string]Config) map[string]Config {
	v := map[string]Config{}
	for name, part := range scoreParts {
		c := out["rope+mlp"]
		part(&c)
		v[name+"+mlp"] = c
	}
	g := gemma2(out["rope+mlp"])
	g.KVHeads, g.Window = 2, 4
	v["gemma2+gqa+window"] = g
	mla := out["mla"]
	mla.AttnSoftcap, mla.FinalSoftcap = 1.5, 2
	v["mla+softcaps"] = mla
	return v
}

// refEmbedScale, refScore and refCapLogits are refForward's steps for these
// parts: embed_scale (1 when unset), a score q·k scaled (attn_scale or
// 1/sqrt(d)) and capped at attn_softcap, and the logits capped at
// final_softcap.
func refEmbedScale(cfg Config) float64 {
	if cfg.EmbedScale > 0 {
		return cfg.EmbedScale
	}
	return 1
}

func refScore(cfg Config, qk float64) float64 {
	s := qk / math.Sqrt(float64(cfg.DHead()))
	if cfg.AttnScale > 0 {
		s = qk * cfg.AttnScale
	}
	if c := cfg.AttnSoftcap; c > 0 {
		s = c * math.Tanh(s/c)
	}
	return s
}

func refCapLogits(cfg Config, logits []float64) []float64 {
	if c := cfg.FinalSoftcap; c > 0 {
		for i, z := range logits {
			logits[i] = c * math.Tanh(z/c)
		}
	}
	return logits
}

// TestScoresKeysValidated: each key refuses a negative, infinite or NaN
// value in one line naming it, and the attention soft-cap refuses ALiBi.
func TestScoresKeysValidated(t *testing.T) {
	base := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, MLP: true, DFF: 8}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.AttnScale = -1 }, "model.attn_scale = -1: must be 0 (1/sqrt(head size)) or positive and finite"},
		{func(c *Config) { c.AttnScale = math.NaN() }, "model.attn_scale = NaN: must be 0"},
		{func(c *Config) { c.AttnSoftcap = math.Inf(1) }, "model.attn_softcap = +Inf: must be 0 (none) or positive and finite"},
		{func(c *Config) { c.AttnSoftcap, c.Position = 50, PositionALiBi }, "model.attn_softcap = 50 with model.position = alibi"},
		{func(c *Config) { c.FinalSoftcap = -30 }, "model.final_softcap = -30: must be 0 (none) or positive and finite"},
		{func(c *Config) { c.EmbedScale = math.NaN() }, "model.embed_scale = NaN: must be 0 (unscaled) or positive and finite"},
		{func(c *Config) { c.MLP, c.Activation = false, ActivationGeGLU }, `model.activation = "geglu": attention-only blocks have no norm or MLP`},
	} {
		cfg := base
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line starting %q", cfg, err, c.want)
		}
	}
	if err := gemma2(base).Validate(); err != nil {
		t.Errorf("Gemma 2's parts refused: %v", err)
	}
}

// TestScoresCard: the model card names each part with its value, and
// GeGLU's default d_ff and tensors are SwiGLU's.
func TestScoresCard(t *testing.T) {
	g := gemma2(Config{Vocab: 9, Context: 8, DModel: 48, Heads: 4, Layers: 1})
	if got, want := g.Family(), "rope positions (base 10000), attention scale 0.4, attention soft-cap 1.5"; got != want {
		t.Errorf("Family() = %q, want %q", got, want)
	}
	if got, want := g.Blocks(), "pre-LN blocks with MLP (GeGLU, no MLP biases), tied embeddings, embeddings scaled by 2.5, soft-capped logits at 2"; got != want {
		t.Errorf("Blocks() = %q, want %q", got, want)
	}
	neo := Config{AttnScale: 1}
	if got := neo.Family(); got != "unscaled attention" {
		t.Errorf("GPT-Neo's Family() = %q, want unscaled attention", got)
	}
	if g.DefaultDFF() != 128 {
		t.Errorf("GeGLU's default d_ff %d, want SwiGLU's 128", g.DefaultDFF())
	}
	g.DFF = 8
	var names []string
	for _, s := range g.ParamSpecs() {
		if strings.HasPrefix(s.Name, "blocks.0.mlp.") {
			names = append(names, s.Name)
		}
	}
	if got := strings.Join(names, " "); got != "blocks.0.mlp.gate.weight blocks.0.mlp.up.weight blocks.0.mlp.down.weight" {
		t.Errorf("GeGLU's tensors %s", got)
	}
}

// TestScoresMemory: each part adds to the estimates what its nodes hold,
// and only when set.
func TestScoresMemory(t *testing.T) {
	base := Config{Vocab: 50, Context: 16, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 32}
	plain := base.forwardValues(3)
	for _, c := range []struct {
		name string
		edit func(*Config)
		more float64
	}{
		{"attn_softcap", func(c *Config) { c.AttnSoftcap = 50 }, 2 * 3 * 4 * 16 * 16},
		{"embed_scale", func(c *Config) { c.EmbedScale = 4 }, 3 * 16 * 16},
		{"final_softcap", func(c *Config) { c.FinalSoftcap = 30 }, 3 * 16 * 50},
		{"attn_scale", func(c *Config) { c.AttnScale = 1 }, 0},
	} {
		cfg := base
		c.edit(&cfg)
		if got := cfg.forwardValues(3) - plain; got != c.more {
			t.Errorf("%s adds %v values, want %v", c.name, got, c.more)
		}
	}
	for _, path := range layers.Paths {
		plain, capped := base, base
		plain.Attention, capped.Attention = string(path), string(path)
		capped.AttnSoftcap, capped.FinalSoftcap = 50, 30
		a, b := &Model{Config: plain, Dtype: tensor.Float32}, &Model{Config: capped, Dtype: tensor.Float32}
		if !(b.DecodeBytes(2, 16) > a.DecodeBytes(2, 16)) {
			t.Errorf("%s: the soft-caps add nothing to DecodeBytes", path)
		}
	}
}

// TestViewBytesHoldsTwoBlocks: a forward run once holds two blocks'
// values whatever the depth (EstimateBytes counts every block's), plus
// the maps kept, (B, H, T, T) float32 per layer, when asked.
func TestViewBytesHoldsTwoBlocks(t *testing.T) {
	shallow := Config{Vocab: 50, Context: 16, DModel: 8, Heads: 2, Layers: 1, MLP: true, DFF: 32}
	deep := shallow
	deep.Layers = 9
	weights := 4 * (deep.ParamCount() - shallow.ParamCount())
	if got, want := deep.ViewBytes(3, false)-shallow.ViewBytes(3, false), weights; got != want {
		t.Errorf("8 more layers add %v bytes without maps, want their weights' %v", got, want)
	}
	if got, want := deep.ViewBytes(3, true)-deep.ViewBytes(3, false), 4.0*9*3*2*16*16; got != want {
		t.Errorf("the maps add %v bytes, want %v", got, want)
	}
	if got, want := deep.EstimateBytes(0, 3)-shallow.EstimateBytes(0, 3)-6*weights, 4*8*shallow.blockValues(3); got != want {
		t.Errorf("EstimateBytes: 8 more layers add %v bytes of values, want %v", got, want)
	}
}
