package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// ablationRun is what one run of a graph gives: logits, loss and, on a
// Train graph, every gradient, as float64 bit patterns.
func ablationRun(t *testing.T, g *Graph, tokens, targets []int, mask []float64) []uint64 {
	t.Helper()
	feedRun(t, g, tokens, targets, mask)
	var bits []uint64
	for _, v := range floats(t, g.Logits) {
		bits = append(bits, math.Float64bits(v))
	}
	bits = append(bits, math.Float64bits(lossOf(t, g)))
	if g.Opts.Train {
		grads, err := g.Gradients()
		if err != nil {
			t.Fatal(err)
		}
		for _, gr := range grads {
			for _, v := range toFloat64s(gr) {
				bits = append(bits, math.Float64bits(v))
			}
		}
	}
	return bits
}

// ablationModel is the random model of testConfig(mlp, path) without
// dropout, so that a graph's runs are comparable.
func ablationModel(t *testing.T, mlp bool, path layers.Path, dtype tensor.Dtype) (Config, *Model) {
	t.Helper()
	cfg := testConfig(mlp, path)
	cfg.Dropout = 0
	return cfg, randomModel(t, cfg, dtype)
}

// TestHooksAtRestChangeNothing: a graph hooked on every activation a hook
// can go on (the residual stream into and out of each block, the head
// outputs), its hooks at rest (mask ones, fill zeros), gives logits, loss
// and gradients bitwise identical to a graph without hooks, on both paths,
// float32 and float64, attention-only and full blocks.
func TestHooksAtRestChangeNothing(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, mlp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v,mlp=%t", dtype, mlp), func(t *testing.T) {
					cfg, m := ablationModel(t, mlp, path, dtype)
					const b, tt = 3, 6
					tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 2)), b*tt, cfg.Vocab)
					plain := ablationRun(t, mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true}), tokens, targets, mask)
					var hooks []string
					for l := range cfg.Layers {
						hooks = append(hooks, ResidPre(l), HeadOut(l), ResidPost(l))
					}
					hooked := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true, Hooks: hooks})
					for _, name := range hooks {
						if _, err := hooked.Hook(name); err != nil {
							t.Fatal(err)
						}
					}
					got := ablationRun(t, hooked, tokens, targets, mask)
					if len(got) != len(plain) {
						t.Fatalf("%d values with the hooks, %d without", len(got), len(plain))
					}
					for i := range got {
						if got[i] != plain[i] {
							t.Fatalf("value %d: %v with hooks at rest, %v without", i, math.Float64frombits(got[i]), math.Float64frombits(plain[i]))
						}
					}
				})
			}
		}
	})
}

// ablate replaces head h of layer l of g by zeros, or by fill (its (T, d)
// output, the same in every row).
func ablate(t *testing.T, g *Graph, l, h int, fill []float64) {
	t.Helper()
	iv, err := g.Hook(HeadOut(l))
	if err != nil {
		t.Fatal(err)
	}
	perRow := iv.Shape[2] * iv.Shape[3]
	iv.ReplaceHead(h, -1, func(i int) float64 {
		if fill == nil {
			return 0
		}
		return fill[i%perRow]
	})
}

// TestAblateHeadMatchesZeroedWeights: zero-ablating head h of layer l gives
// the logits of the intact graph whose attn.out weight has the columns of
// head h (in features [h*d, (h+1)*d)) set to zero, the same computation done
// on the weights instead of the graph, within 1e-12 (float64). Both paths.
func TestAblateHeadMatchesZeroedWeights(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		cfg, m := ablationModel(t, false, path, tensor.Float64)
		const b, tt = 3, 6
		tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 2)), b*tt, cfg.Vocab)
		d := cfg.DModel / cfg.Heads
		for l := range cfg.Layers {
			for h := range cfg.Heads {
				g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Hooks: []string{HeadOut(l)}})
				ablate(t, g, l, h, nil)
				feedRun(t, g, tokens, targets, mask)
				got := floats(t, g.Logits)

				zeroed := randomModel(t, cfg, tensor.Float64)
				w := param(t, zeroed, fmt.Sprintf("blocks.%d.attn.out.weight", l)) // (D, D) = (out, in)
				for o := range cfg.DModel {
					for c := h * d; c < (h+1)*d; c++ {
						graphtest.Set(w, o*cfg.DModel+c, 0)
					}
				}
				ref := mustBuild(t, zeroed, BuildOptions{Batch: b, SeqLen: tt})
				feedRun(t, ref, tokens, targets, mask)
				if diff := graphtest.MaxAbsDiff(t, got, floats(t, ref.Logits)); diff > 1e-12 {
					t.Errorf("layer %d head %d: ablated logits differ from zeroed out-weight logits by %g", l, h, diff)
				}
			}
		}
	})
}

// TestMeanAblationOfIdenticalRows: on a batch whose rows are all the same
// sequence, each head's mean output is its output in every row, so
// replacing every head of every layer at once by its output in row 0
// leaves the logits as they were (within 1e-12), while zeroing them changes
// them; ResetHooks restores the intact run exactly. This pins the head
// outputs' layout (B, H, T, d) in the cache and in ReplaceHead. Both paths.
func TestMeanAblationOfIdenticalRows(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		cfg, m := ablationModel(t, true, path, tensor.Float64)
		const b, tt = 4, 6
		row, rowTargets, rowMask := randomBatch(rand.New(rand.NewPCG(1, 2)), tt, cfg.Vocab)
		var tokens, targets []int
		var mask []float64
		for range b {
			tokens, targets, mask = append(tokens, row...), append(targets, rowTargets...), append(mask, rowMask...)
		}
		var heads []string
		for l := range cfg.Layers {
			heads = append(heads, HeadOut(l))
		}
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Cache: heads, Hooks: heads})
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		defer vm.Close()
		run(t, vm)
		intact := floats(t, g.Logits)
		firstRow := make([][][]float64, cfg.Layers) // [layer][head] (T*d) of row 0
		for l := range cfg.Layers {
			y, err := g.Activation(HeadOut(l))
			if err != nil {
				t.Fatal(err)
			}
			all := toFloat64s(y)
			for h := range cfg.Heads {
				firstRow[l] = append(firstRow[l], append([]float64(nil), all[h*tt*cfg.DHead():(h+1)*tt*cfg.DHead()]...))
			}
		}
		for _, fill := range []string{"mean", "zero"} {
			for l := range cfg.Layers {
				for h := range cfg.Heads {
					f := firstRow[l][h]
					if fill == "zero" {
						f = nil
					}
					ablate(t, g, l, h, f)
				}
			}
			run(t, vm)
			diff := graphtest.MaxAbsDiff(t, floats(t, g.Logits), intact)
			if fill == "mean" && diff > 1e-12 {
				t.Errorf("mean ablation of identical rows changed the logits by %g", diff)
			}
			if fill == "zero" && diff < 1e-3 {
				t.Errorf("zero ablation of every head changed the logits by only %g", diff)
			}
		}
		g.ResetHooks()
		run(t, vm)
		if diff := graphtest.MaxAbsDiff(t, floats(t, g.Logits), intact); diff != 0 {
			t.Errorf("after ResetHooks the logits differ from the intact run by %g", diff)
		}
	})
}

// TestResidualHook: replacing the residual stream into block 1 by its value
// in another run gives that run's logits (what comes after the hook is a
// function of the stream alone), within 1e-12. Both paths.
func TestResidualHook(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		cfg, m := ablationModel(t, true, path, tensor.Float64)
		const b, tt = 2, 5
		rng := rand.New(rand.NewPCG(3, 4))
		tokensA, targets, mask := randomBatch(rng, b*tt, cfg.Vocab)
		tokensB, _, _ := randomBatch(rng, b*tt, cfg.Vocab)
		name := ResidPre(1)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Cache: []string{name}, Hooks: []string{name}})
		feedRun(t, g, tokensB, targets, mask)
		wantLogits := floats(t, g.Logits)
		y, err := g.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		streamB := toFloat64s(y)
		iv, err := g.Hook(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range streamB {
			iv.Replace(i, v)
		}
		feedRun(t, g, tokensA, targets, mask)
		if diff := graphtest.MaxAbsDiff(t, floats(t, g.Logits), wantLogits); diff > 1e-12 {
			t.Errorf("patched stream: logits differ from the run they came from by %g", diff)
		}
	})
}

// TestHookErrors: a hook or cached activation the graph was not built with
// is refused, naming it.
func TestHookErrors(t *testing.T) {
	cfg := testConfig(false, layers.Fused)
	m := mustNew(t, cfg, tensor.Float64, 5)
	plain := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 4})
	if _, err := plain.Hook(HeadOut(0)); err == nil || !strings.Contains(err.Error(), "hook blocks.0.attn.head_out: the graph was built without it in BuildOptions.Hooks") {
		t.Errorf("a hook the graph lacks: %v", err)
	}
	if _, err := plain.Activation(HeadOut(0)); err == nil || !strings.Contains(err.Error(), "activation blocks.0.attn.head_out: the graph was built without it") {
		t.Errorf("an activation the graph does not keep: %v", err)
	}
}

func param(t *testing.T, m *Model, name string) *tensor.Dense {
	t.Helper()
	for _, p := range m.Params {
		if p.Name == name {
			return p.Value
		}
	}
	t.Fatalf("no parameter %s", name)
	return nil
}
