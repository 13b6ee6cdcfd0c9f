package model

import (
	"strings"
	"testing"
)

// TestFamilyValidation: every bad value or combination of the attention
// family's keys is one line naming the keys and numbers, before any graph.
func TestFamilyValidation(t *testing.T) {
	base := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1}
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown position", func(c *Config) { c.Position = "relative" }, `model.position = "relative": want one of learned, sinusoidal, rope, alibi, none`},
		{"another library's position", func(c *Config) { c.Position = "rotary" }, `model.position = "rotary": want one of learned, sinusoidal, rope, alibi, none; did you mean rope?`},
		{"rope_base without rope", func(c *Config) { c.RopeBase = 500 }, "model.rope_base = 500 is only used with model.position = rope (it is learned)"},
		{"rope_base not above 1", func(c *Config) { c.Position, c.RopeBase = "rope", 0.5 }, "model.rope_base = 0.5: must be finite and > 1"},
		{"odd head size with rope", func(c *Config) { c.Position, c.DModel, c.Heads = "rope", 12, 4 }, "model.position = rope needs an even head size (channel i pairs with i+d/2): d_model 12 / heads 4 = 3"},
		{"odd d_model with sinusoidal", func(c *Config) { c.Position, c.DModel, c.Heads = "sinusoidal", 9, 3 }, "model.position = sinusoidal needs an even model.d_model, not 9"},
		{"kv_heads not dividing", func(c *Config) { c.KVHeads = 3 }, "model.kv_heads = 3 must divide model.heads = 4"},
		{"negative kv_heads", func(c *Config) { c.KVHeads = -1 }, "model.kv_heads = -1 must divide model.heads = 4"},
		{"negative window", func(c *Config) { c.Window = -2 }, "model.window = -2: must be 0 (full) or positive"},
		{"negative latent", func(c *Config) { c.KVLatent = -1 }, "model.kv_latent = -1: must be 0 (none) or positive"},
		{"latent with kv_heads", func(c *Config) { c.KVLatent, c.KVHeads = 8, 2 }, "model.kv_latent = 8 with model.kv_heads = 2"},
		{"latent with rope", func(c *Config) { c.KVLatent, c.Position = 8, "rope" }, "decoupled rotary key, which is not built"},
	} {
		cfg := base
		c.edit(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
	}
	for _, ok := range []Config{
		{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, Position: "rope", RopeBase: 500, KVHeads: 2, Window: 3},
		{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, Position: "alibi", KVLatent: 6, KVHeads: 4},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}
