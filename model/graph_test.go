package model

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomModel is New(cfg, dtype, 5) with the weights of randomize(m, 3,
// 0.5), the model most tests run.
func randomModel(t *testing.T, cfg Config, dtype tensor.Dtype) *Model {
	t.Helper()
	m := mustNew(t, cfg, dtype, 5)
	randomize(m, 3, 0.5)
	return m
}

// randomize overwrites every weight of m in place with values drawn from
// seed: N(0, std^2) for matrices, 1 + N(0, 0.1^2) for norm weights and
// N(0, 0.1^2) for biases, so that no gradient is tiny or structurally zero.
func randomize(m *Model, seed uint64, std float64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	for _, p := range m.Params {
		spec := p.Value.Shape()
		for i := 0; i < p.Value.Shape().TotalSize(); i++ {
			var v float64
			switch {
			case len(spec) == 2:
				v = rng.NormFloat64() * std
			case isNormWeight(p.Name):
				v = 1 + rng.NormFloat64()*0.1
			default:
				v = rng.NormFloat64() * 0.1
			}
			graphtest.Set(p.Value, i, v)
		}
	}
}

// isNormWeight reports a norm's weight: ln1, ln2, their _post norms, ln_f or QK-norm's
// q_norm and k_norm.
func isNormWeight(name string) bool {
	for _, norm := range []string{"ln1", "ln2", "ln_f", "_norm", "_post"} {
		if strings.HasSuffix(name, norm+".weight") {
			return true
		}
	}
	return false
}

func at(t *tensor.Dense, i int) float64 {
	switch d := t.Data().(type) {
	case []float64:
		return d[i]
	case []float32:
		return float64(d[i])
	}
	panic("unsupported dtype")
}

// batch is one random batch of tokens, targets and a loss mask with some
// positions unscored.
func randomBatch(rng *rand.Rand, n, vocab int) (tokens, targets []int, mask []float64) {
	tokens, targets, mask = make([]int, n), make([]int, n), make([]float64, n)
	for i := range tokens {
		tokens[i] = rng.IntN(vocab)
		targets[i] = rng.IntN(vocab)
		mask[i] = 1
		if i%3 == 1 {
			mask[i] = 0
		}
	}
	return tokens, targets, mask
}

func run(t *testing.T, vm gorgonia.VM) {
	t.Helper()
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

func lossOf(t *testing.T, g *Graph) float64 {
	t.Helper()
	switch v := g.Loss.Value().Data().(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	}
	t.Fatalf("loss value %T", g.Loss.Value())
	return 0
}

// TestGradientsMatchFiniteDifferences compares every entry of every
// parameter gradient of the graph with central differences
// (L(w+h) - L(w-h)) / 2h, h = 1e-5, of the loss of refForward, the
// independent plain-Go float64 forward pass, with the same key mask and
// dropout masks, with GPT-2's LayerNorm and with each of normConfigs'
// norms. Tolerance: per tensor,
// ||g - fd||_2 / max(||g||_2, ||fd||_2) < 1e-6; the weights are random with
// std 0.5 so that no gradient is tiny.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		type fdCase struct {
			name                         string
			mlp, keyPad, dropout, noBias bool
			qkNormTied                   bool   // QK-norm and a tied LM head
			part                         string // a key of mlpParts, or "" for GPT-2's MLP
		}
		cases := []fdCase{
			{"attention-only", false, false, false, false, false, ""},
			{"attention-only/keypad+dropout", false, true, true, false, false, ""},
			{"attention-only/no-bias", false, false, false, true, false, ""},
			{"mlp", true, false, false, false, false, ""},
			{"mlp/keypad+dropout", true, true, true, false, false, ""},
			{"rmsnorm", true, true, true, false, false, ""}, // a case named after a normConfigs entry has that norm
			{"layernorm without bias", true, true, true, false, false, ""},
			{"mlp/qk_norm+tied", true, false, false, false, true, ""},
			{"attention-only/qk_norm+tied+keypad", false, true, false, true, true, ""},
		}
		for _, part := range slices.Sorted(maps.Keys(mlpParts)) {
			cases = append(cases, fdCase{"mlp/" + part, true, false, false, false, false, part})
		}
		for _, part := range slices.Sorted(maps.Keys(scoreParts)) { // a case named after a scoreParts entry has that part
			cases = append(cases, fdCase{part, true, true, false, false, false, ""})
		}
		for ci, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				cfg := Config{Vocab: 5, Context: 4, DModel: 6, Heads: 2, Layers: 2, MLP: c.mlp, DFF: 5,
					QKVBias: !c.noBias, OutBias: !c.noBias, LMBias: !c.noBias, Attention: string(path),
					QKNorm: c.qkNormTied, TieEmbeddings: c.qkNormTied}
				if c.dropout {
					cfg.Dropout = 0.25
				}
				if norm := normConfigs[c.name]; norm != nil {
					norm(&cfg)
				}
				if c.part != "" {
					mlpParts[c.part](&cfg)
				}
				if part := scoreParts[c.name]; part != nil {
					part(&cfg)
				}
				m, err := New(cfg, tensor.Float64, 3)
				if err != nil {
					t.Fatal(err)
				}
				randomize(m, uint64(ci), 0.5)
				const b, T = 2, 4
				g, err := Build(m, BuildOptions{Batch: b, SeqLen: T, Train: true, KeyPadding: c.keyPad})
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(7, uint64(ci)))
				tokens, targets, mask := randomBatch(rng, b*T, cfg.Vocab)
				if err := g.Feed(tokens, targets, mask); err != nil {
					t.Fatal(err)
				}
				var km []float64
				if c.keyPad {
					// pad the first key of batch 0 (query 0 then sees nothing) and the last two of batch 1
					km = g.KeyMask.Value().Data().([]float64)
					km[0], km[T+2], km[T+3] = 0, 0, 0
				}
				var drops [][]float64
				if c.dropout {
					if len(g.DropoutMasks) != cfg.Layers {
						t.Fatalf("%d dropout masks, want %d", len(g.DropoutMasks), cfg.Layers)
					}
					for _, dm := range g.DropoutMasks {
						d := dm.Value().Data().([]float64)
						for i := range d {
							d[i] = 0
							if rng.Float64() >= cfg.Dropout {
								d[i] = 1 / (1 - cfg.Dropout)
							}
						}
						drops = append(drops, d)
					}
				}
				vm := g.NewMachine()
				defer vm.Close()
				run(t, vm)
				grads, err := g.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				_, _, refLoss := refForward(m, b, T, tokens, targets, mask, km, drops)
				if e := math.Abs(lossOf(t, g) - refLoss); e > 1e-12 {
					t.Fatalf("graph loss %v, reference loss %v", lossOf(t, g), refLoss)
				}
				const h = 1e-5
				worst := 0.0
				for i, p := range m.Params {
					var diff, gn, fn float64
					for j, gj := range grads[i].Float64s() {
						w := at(p.Value, j)
						graphtest.Set(p.Value, j, w+h)
						_, _, up := refForward(m, b, T, tokens, targets, mask, km, drops)
						graphtest.Set(p.Value, j, w-h)
						_, _, down := refForward(m, b, T, tokens, targets, mask, km, drops)
						graphtest.Set(p.Value, j, w)
						fd := (up - down) / (2 * h)
						diff += (gj - fd) * (gj - fd)
						gn += gj * gj
						fn += fd * fd
					}
					rel := math.Sqrt(diff) / math.Max(math.Sqrt(math.Max(gn, fn)), 1e-300)
					if rel > 1e-6 || math.IsNaN(rel) {
						t.Errorf("%s: relative gradient error %.3g (|g| %.3g, |fd| %.3g)", p.Name, rel, math.Sqrt(gn), math.Sqrt(fn))
					}
					worst = math.Max(worst, rel)
				}
				t.Logf("worst relative error %.2g", worst)
			})
		}
	})
}

// TestLeanMachineMatchesNewMachine: the machine train.Run uses (no copies
// of the attention weights) gives the same loss, logits and gradients, bit
// for bit, as NewMachine on a float32 model with full blocks, and on one
// with Gemma 2's parts (whose soft-caps' gradients read their outputs),
// over two runs.
func TestLeanMachineMatchesNewMachine(t *testing.T) {
	plain := Config{Vocab: 7, Context: 6, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16, OutBias: true}
	for name, cfg := range map[string]Config{"gpt2": plain, "gemma2": gemma2(plain)} {
		t.Run(name, func(t *testing.T) { leanMatchesNewMachine(t, cfg) })
	}
}

func leanMatchesNewMachine(t *testing.T, cfg Config) {
	m := mustNew(t, cfg, tensor.Float32, 4)
	randomize(m, 5, 0.5)
	var outs [2][]float32
	for i, lean := range []bool{false, true} {
		g, err := Build(m, BuildOptions{Batch: 3, SeqLen: 6, Train: true})
		if err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		if lean {
			vm = g.NewLeanMachine()
		}
		for step := 0; step < 2; step++ {
			tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(uint64(step), 8)), 18, cfg.Vocab)
			if err := g.Feed(tokens, targets, mask); err != nil {
				t.Fatal(err)
			}
			run(t, vm)
			outs[i] = append(outs[i], g.Loss.Value().Data().(float32))
			outs[i] = append(outs[i], g.Logits.Value().Data().([]float32)...)
			grads, err := g.Gradients()
			if err != nil {
				t.Fatal(err)
			}
			for _, gr := range grads {
				outs[i] = append(outs[i], gr.Float32s()...)
			}
		}
		vm.Close()
	}
	if len(outs[0]) != len(outs[1]) {
		t.Fatalf("%d values vs %d", len(outs[0]), len(outs[1]))
	}
	for i := range outs[0] {
		if outs[0][i] != outs[1][i] {
			t.Fatalf("value %d: NewMachine %v, NewLeanMachine %v", i, outs[0][i], outs[1][i])
		}
	}
}
