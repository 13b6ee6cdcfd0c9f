package model

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// decodeVariants are one model of each attention kind, attention-only and
// with full blocks (dropout configured: a decoding step never drops), one
// with full blocks for each of normConfigs' norms and each MLP kind
// (mlpParts), and GPT-2's block.
func decodeVariants() map[string]Config {
	base := Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, QKVBias: true, OutBias: true, LMBias: true}
	edits := map[string]func(*Config){
		"learned":     func(*Config) {},
		"sinusoidal":  func(c *Config) { c.Position = PositionSinusoidal },
		"rope":        func(c *Config) { c.Position = PositionRope },
		"alibi":       func(c *Config) { c.Position = PositionALiBi },
		"none":        func(c *Config) { c.Position = PositionNone },
		"gqa":         func(c *Config) { c.KVHeads = 2; c.Position = PositionRope },
		"mqa":         func(c *Config) { c.KVHeads = 1 },
		"window":      func(c *Config) { c.Window = 3; c.Position = PositionALiBi },
		"mla":         func(c *Config) { c.KVLatent = 6 },
		"qk_norm":     func(c *Config) { c.QKNorm = true },
		"qk_norm+gqa": func(c *Config) { c.QKNorm, c.KVHeads, c.Position = true, 2, PositionRope },
		"tied":        func(c *Config) { c.TieEmbeddings = true },
	}
	out := map[string]Config{}
	for name, edit := range edits {
		for _, mlp := range []bool{false, true} {
			c := base
			edit(&c)
			if mlp {
				c.MLP, c.DFF, c.Dropout = true, 24, 0.3
				name += "+mlp"
			}
			out[name] = c
		}
	}
	for name, norm := range normConfigs {
		c := base
		c.MLP, c.DFF = true, 24
		norm(&c)
		out[name] = c
	}
	for name, part := range mlpParts { // on rope, as Llama's
		c := out["rope+mlp"]
		part(&c)
		out[name+"+mlp"] = c
	}
	for name, c := range scoreVariants(out) {
		out[name] = c
	}
	// GPT-2's block (biased QKV, tied head, no head bias) at a width where
	// a step's products take every branch of the float32 GEMV: the tied
	// head (1031 x 64) split over the cores, d_ff 200 a tail past the
	// 16-lane groups, row blocks cut short.
	out["gpt2"] = Config{Vocab: 1031, Context: 9, DModel: 64, Heads: 4, Layers: 2, MLP: true, DFF: 200,
		QKVBias: true, OutBias: true, TieEmbeddings: true}
	return out
}

// TestDecoderMatchesForward: at every step, the cached decoder's logits equal
// a full forward of the same prefix (float64 1e-12, float32 1e-4), for
// every attention kind, on both paths, over a batch of three sequences:
// with the whole cache allocated up front, and with a cache that starts at
// one position and grows four times (1, 2, 4, 8, 9), copying what it holds.
func TestDecoderMatchesForward(t *testing.T) {
	for name, cfg := range decodeVariants() {
		for _, path := range []string{"fused", "gorgonia"} {
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				cfg := cfg
				cfg.Attention = path
				t.Run(fmt.Sprintf("%s/%s/%v", name, path, dt), func(t *testing.T) {
					tol := 1e-12
					if dt == tensor.Float32 {
						tol = 1e-4
					}
					checkDecoder(t, cfg, dt, tol)
				})
			}
		}
	}
}

func checkDecoder(t *testing.T, cfg Config, dt tensor.Dtype, tol float64) {
	m := mustNew(t, cfg, dt, 7)
	const b = 3
	tt, v := cfg.Context, cfg.Vocab
	rng := rand.New(rand.NewPCG(3, 4))
	tokens := make([]int, b*tt)
	for i := range tokens {
		tokens[i] = rng.IntN(v)
	}
	decoders := []struct {
		name  string
		start int
	}{{"whole cache", tt}, {"growing cache", 1}}
	decs := make([]*Decoder, len(decoders))
	for i, c := range decoders {
		var err error
		if decs[i], err = NewGrowingDecoder(m, b, c.start, tt); err != nil {
			t.Fatal(err)
		}
		defer decs[i].Close()
	}
	for s := 0; s < tt; s++ {
		step := make([]int, b)
		for r := range step {
			step[r] = tokens[r*tt+s]
		}
		want := prefixLogits(t, m, tokens, b, tt, s+1)
		for i, dec := range decs {
			got, err := dec.Step(step)
			if err != nil {
				t.Fatalf("%s: %v", decoders[i].name, err)
			}
			if grown := min(tt, max(decoders[i].start, 1<<bits.Len(uint(s)))); dec.Capacity != grown {
				t.Fatalf("%s step %d: the cache holds %d positions, want %d", decoders[i].name, s, dec.Capacity, grown)
			}
			for r := 0; r < b; r++ {
				for k := 0; k < v; k++ {
					g, w := got[r*v+k], want[(r*(s+1)+s)*v+k]
					if math.Abs(g-w) > tol*math.Max(1, math.Abs(w)) {
						t.Fatalf("%s step %d row %d logit %d: cached %v, full forward %v", decoders[i].name, s, r, k, g, w)
					}
				}
			}
		}
	}
	for i, dec := range decs {
		if _, err := dec.Step(make([]int, b)); err == nil {
			t.Errorf("%s: a step beyond the limit of %d positions succeeded", decoders[i].name, tt)
		}
	}
}

// prefixLogits runs a full forward of the first n positions of each row.
func prefixLogits(t *testing.T, m *Model, tokens []int, b, tt, n int) []float64 {
	t.Helper()
	g, err := Build(m, BuildOptions{Batch: b, SeqLen: n})
	if err != nil {
		t.Fatal(err)
	}
	prefix := make([]int, 0, b*n)
	for r := 0; r < b; r++ {
		prefix = append(prefix, tokens[r*tt:r*tt+n]...)
	}
	if err := g.Feed(prefix, prefix, ones(b*n)); err != nil {
		t.Fatal(err)
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	logits, err := Float64s(g.Logits.Value())
	if err != nil {
		t.Fatal(err)
	}
	return logits
}

// TestDecoderWeightsInHugePages: making a decoder of HugePagesFrom steps or
// more hands every float32 weight of the model, and nothing else, to
// kernels.HugePages (a float64 model's to nothing); a shorter one, whose
// steps would not repay the move, hands nothing.
func TestDecoderWeightsInHugePages(t *testing.T) {
	defer func(f func(...[]float32)) { hugePages = f }(hugePages)
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		m, err := New(decodeVariants()["rope+mlp"], dtype, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]float32
		hugePages = func(xs ...[]float32) { got = append(got, xs...) }
		if _, err := NewDecoder(m, 1, 4); err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("%v: a decoder of 4 steps handed %d slices to HugePages, want none", dtype, len(got))
		}
		if _, err := NewGrowingDecoder(m, 1, 4, HugePagesFrom); err != nil {
			t.Fatal(err)
		}
		want := 0
		if dtype == tensor.Float32 {
			want = len(m.Params)
		}
		if len(got) != want {
			t.Fatalf("%v: %d slices handed to HugePages, want %d (the weights)", dtype, len(got), want)
		}
		for i, w := range got {
			if p := m.Params[i].Value.Data().([]float32); len(p) != len(w) || &p[0] != &w[0] {
				t.Errorf("%v: slice %d handed to HugePages is not %s's memory", dtype, i, m.Params[i].Name)
			}
		}
	}
}
