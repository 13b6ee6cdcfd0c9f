package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// normsVariants are the keys of where the norms sit and how the residual
// adds, each in the model that uses it, at the reference's sizes: Gemma's
// sandwich norms with (1 + w) RMSNorms and per-head QK-norm, OLMo 2's
// post-norms with QK-norm over the whole projections (grouped, on rope),
// GPT-NeoX's parallel residual, and post-norm LayerNorms with QK-norm over
// the projections on multi-head attention (the case the Gorgonia path's
// MHA split reads).
func normsVariants() map[string]Config {
	base := Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24}
	gemma, olmo, neox, post := base, base, base, base
	gemma.Norm, gemma.NormEps, gemma.NormPlacement, gemma.NormOffset = NormRMS, 1e-6, PlacementSandwich, true
	gemma.QKNorm, gemma.Position, gemma.KVHeads, gemma.Activation, gemma.MLPBias = true, PositionRope, 2, ActivationSwiGLU, FlagOff
	olmo.Norm, olmo.NormPlacement, olmo.QKNorm, olmo.QKNormScope = NormRMS, PlacementPost, true, QKScopeAll
	olmo.Position, olmo.KVHeads, olmo.Activation, olmo.MLPBias = PositionRope, 2, ActivationSwiGLU, FlagOff
	neox.ParallelResidual, neox.Position, neox.QKVBias, neox.OutBias, neox.Activation = true, PositionRope, true, true, ActivationGELU
	post.NormPlacement, post.QKNorm, post.QKNormScope, post.QKVBias = PlacementPost, true, QKScopeAll, true
	return map[string]Config{"gemma sandwich+offset": gemma, "olmo2 post+qk all": olmo, "neox parallel": neox, "post layernorm+qk all": post}
}

// TestNormsValidation: each key's bad value or combination is one line
// naming the key, the value and what is allowed; the models' own
// combinations pass.
func TestNormsValidation(t *testing.T) {
	full := Config{Vocab: 9, Context: 8, DModel: 16, Heads: 4, Layers: 1, MLP: true, DFF: 32}
	for _, c := range []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{"unknown placement", func(c *Config) { c.NormPlacement = "middle" }, `model.norm_placement = "middle": want one of pre, sandwich, post`},
		{"another word for post", func(c *Config) { c.NormPlacement = "post-LN" }, `want one of pre, sandwich, post; did you mean post?`},
		{"placement without blocks", func(c *Config) { c.MLP, c.DFF, c.NormPlacement = false, 0, PlacementPost }, `model.norm_placement = "post": attention-only blocks have no norm or MLP`},
		{"offset on a LayerNorm", func(c *Config) { c.NormOffset = true }, "model.norm_offset = true: only an RMSNorm scales by (1 + w); set model.norm: rmsnorm (it is layernorm)"},
		{"unknown scope", func(c *Config) { c.QKNorm, c.QKNormScope = true, "layer" }, `model.qk_norm_scope = "layer": want one of head, all`},
		{"scope without qk_norm", func(c *Config) { c.QKNormScope = QKScopeAll }, `model.qk_norm_scope = "all": only used with model.qk_norm: true`},
		{"parallel without blocks", func(c *Config) { c.MLP, c.DFF, c.ParallelResidual = false, 0, true }, "model.parallel_residual = true: attention-only blocks"},
		{"parallel with post-norms", func(c *Config) { c.ParallelResidual, c.NormPlacement = true, PlacementSandwich }, "model.parallel_residual = true with model.norm_placement = sandwich: the parallel residual is built for pre-norm blocks only"},
	} {
		cfg := full
		c.change(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, err, c.want)
		}
	}
	for name, cfg := range normsVariants() {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNormsParamSpecs: sandwich blocks hold ln1, ln1_post, ln2 and
// ln2_post, post-norm blocks the post norms only; QK-norm over the
// projections has weights (H·d) and (G·d); with norm_offset every RMSNorm
// weight starts at 0 (the scale 1 + w is then 1).
func TestNormsParamSpecs(t *testing.T) {
	v := normsVariants()
	norms := func(c Config) (names []string) {
		for _, s := range c.ParamSpecs() {
			if strings.HasPrefix(s.Name, "blocks.0.ln") {
				names = append(names, strings.TrimPrefix(s.Name, "blocks.0."))
			}
		}
		return names
	}
	want := map[string][]string{
		"gemma sandwich+offset": {"ln1.weight", "ln1_post.weight", "ln2.weight", "ln2_post.weight"},
		"olmo2 post+qk all":     {"ln1_post.weight", "ln2_post.weight"},
		"neox parallel":         {"ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias"},
	}
	for name, w := range want {
		if got := norms(v[name]); !slices.Equal(got, w) {
			t.Errorf("%s: block norms %q, want %q", name, got, w)
		}
	}
	shapes := map[string][]int{}
	for _, s := range v["olmo2 post+qk all"].ParamSpecs() {
		shapes[s.Name] = s.Shape
	}
	if q, k := shapes["blocks.0.attn.q_norm.weight"], shapes["blocks.0.attn.k_norm.weight"]; !slices.Equal(q, []int{16}) || !slices.Equal(k, []int{8}) {
		t.Errorf("OLMo 2's q_norm %v and k_norm %v, want (H·d = 16) and (G·d = 8)", q, k)
	}
	for _, s := range v["gemma sandwich+offset"].ParamSpecs() {
		if strings.Contains(s.Name, "norm") || strings.Contains(s.Name, "ln") {
			if s.Init != InitZeros {
				t.Errorf("%s with norm_offset starts as %v, want zeros", s.Name, s.Init)
			}
		}
	}
}

// TestNormsBlocks: the model card names each part.
func TestNormsBlocks(t *testing.T) {
	v := normsVariants()
	for name, want := range map[string]string{
		"gemma sandwich+offset": "blocks with MLP and sandwich norms (RMSNorm (1 + w), norm eps 1e-06, SwiGLU, no MLP biases), QK-norm",
		"olmo2 post+qk all":     "post-norm blocks with MLP (RMSNorm, SwiGLU, no MLP biases), QK-norm over the projection",
		"neox parallel":         "pre-LN blocks with MLP (exact GELU), parallel residual",
	} {
		if got := v[name].Blocks(); got != want {
			t.Errorf("%s: Blocks() = %q, want %q", name, got, want)
		}
	}
	pre := v["gemma sandwich+offset"]
	pre.NormPlacement = ""
	if got := pre.Blocks(); !strings.HasPrefix(got, "pre-RMSNorm blocks with MLP (RMSNorm (1 + w),") {
		t.Errorf("pre-norm with norm_offset: Blocks() = %q", got)
	}
}

// TestNormsGradients: every gradient of each normsVariants model, on both
// paths in float64, equals central differences (h = 1e-5) of the
// reference's loss (reference.go, an implementation that shares no code
// with Build), within 1e-6 relative per tensor.
func TestNormsGradients(t *testing.T) {
	variants := normsVariants()
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range variants {
				if !yield(n) {
					return
				}
			}
		}) {
			t.Run(name, func(t *testing.T) {
				cfg := variants[name]
				cfg.Vocab, cfg.Context, cfg.DModel, cfg.DFF, cfg.Attention = 5, 3, 8, 6, string(path)
				m := mustNew(t, cfg, tensor.Float64, 5)
				randomize(m, 3, 0.3) // at 0.5 Gemma's doubled norms give gradients of hundreds, whose central differences are off by more than 1e-6 at h = 1e-5
				const b, T = 2, 3
				tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(4, 5)), b*T, cfg.Vocab)
				g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: T, Train: true})
				if err := g.Feed(tokens, targets, mask); err != nil {
					t.Fatal(err)
				}
				vm := g.NewMachine()
				defer vm.Close()
				run(t, vm)
				grads, err := g.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				loss := func() float64 { return referenceLoss(t, m, tokens, targets, mask, b, T) }
				if e := math.Abs(lossOf(t, g) - loss()); e > 1e-12 {
					t.Fatalf("graph loss %v, reference loss %v", lossOf(t, g), loss())
				}
				const h = 1e-5
				for i, p := range m.Params {
					var diff, gn, fn float64
					for j, gj := range grads[i].Float64s() {
						w := at(p.Value, j)
						graphtest.Set(p.Value, j, w+h)
						up := loss()
						graphtest.Set(p.Value, j, w-h)
						down := loss()
						graphtest.Set(p.Value, j, w)
						fd := (up - down) / (2 * h)
						diff, gn, fn = diff+(gj-fd)*(gj-fd), gn+gj*gj, fn+fd*fd
					}
					rel := math.Sqrt(diff) / math.Max(math.Sqrt(math.Max(gn, fn)), 1e-300)
					if !(rel <= 1e-6) || gn == 0 {
						t.Errorf("%s: relative gradient error %.3g (|g| %.3g, |fd| %.3g)", p.Name, rel, math.Sqrt(gn), math.Sqrt(fn))
					}
				}
			})
		}
	})
}

// referenceLoss is the mean cross-entropy of the reference's logits
// (referenceLogits) over the positions mask scores, of the b rows of T
// tokens.
func referenceLoss(t *testing.T, m *Model, tokens, targets []int, mask []float64, b, T int) float64 {
	logits, v := referenceLogits(t, m, tokens, b, T), m.Config.Vocab
	var loss, scored float64
	for r, target := range targets {
		if mask[r] == 0 {
			continue
		}
		scored++
		row := logits[r*v : (r+1)*v]
		top := slices.Max(row)
		var sum float64
		for _, z := range row {
			sum += math.Exp(z - top)
		}
		loss += top + math.Log(sum) - row[target]
	}
	return loss / scored
}

// TestNormsEstimateBytes: sandwich norms add their two norms' weights
// (a LayerNorm's weight and bias, 4·32, at 24 bytes each with gradients
// and Adam moments) and 4 (B·T, D) tensors per block, forward and
// backward; the parallel residual 1 (B·T, D); post-norms as many as
// pre-norms. Counted by hand from TestEstimateBytes' MLP model, B·T = 512.
func TestNormsEstimateBytes(t *testing.T) {
	pre := Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true, MLP: true, DFF: 64}
	base := pre.EstimateBytes(32, 0)
	sandwich, post, parallel := pre, pre, pre
	sandwich.NormPlacement, post.NormPlacement, parallel.ParallelResidual = PlacementSandwich, PlacementPost, true
	for _, c := range []struct {
		name string
		cfg  Config
		want float64
	}{
		{"sandwich", sandwich, base + 24*4*32 + 4*2*4*512*32},
		{"post", post, base},
		{"parallel", parallel, base + 4*2*512*32},
	} {
		if got := c.cfg.EstimateBytes(32, 0); got != c.want {
			t.Errorf("%s: EstimateBytes(32, 0) = %v, want %v", c.name, got, c.want)
		}
	}
}
