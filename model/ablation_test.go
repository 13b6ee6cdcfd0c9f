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

// TestHeadMaskOnesIsNoMask: a graph with the head mask inputs at their
// defaults (ones, fill zeros) gives logits, loss and gradients bitwise
// identical to a graph without them, on both paths, float32 and float64,
// attention-only and full blocks.
func TestHeadMaskOnesIsNoMask(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			for _, mlp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v,mlp=%t", dtype, mlp), func(t *testing.T) {
					cfg, m := ablationModel(t, mlp, path, dtype)
					const b, tt = 3, 6
					tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 2)), b*tt, cfg.Vocab)
					plain := ablationRun(t, mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true}), tokens, targets, mask)
					masked := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true, HeadMask: true})
					if len(masked.HeadMasks) != cfg.Layers || len(masked.HeadFills) != cfg.Layers {
						t.Fatalf("%d head masks and %d fills, want %d of each", len(masked.HeadMasks), len(masked.HeadFills), cfg.Layers)
					}
					got := ablationRun(t, masked, tokens, targets, mask)
					if len(got) != len(plain) {
						t.Fatalf("%d values with the mask, %d without", len(got), len(plain))
					}
					for i := range got {
						if got[i] != plain[i] {
							t.Fatalf("value %d: %v with a mask of ones, %v without", i, math.Float64frombits(got[i]), math.Float64frombits(plain[i]))
						}
					}
				})
			}
		}
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
				g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, HeadMask: true})
				if err := g.AblateHead(l, h, nil); err != nil {
					t.Fatal(err)
				}
				feedRun(t, g, tokens, targets, mask)
				got := floats(t, g.Logits)

				zeroed := randomModel(t, cfg, tensor.Float64)
				w := param(t, zeroed, fmt.Sprintf("blocks.%d.attn.out.weight", l)) // (D, D) = (out, in)
				for o := range cfg.DModel {
					for c := h * d; c < (h+1)*d; c++ {
						set(w, o*cfg.DModel+c, 0)
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
// mean-ablating every head of every layer at once leaves the logits as they
// were (within 1e-12), while zero-ablating them changes them. This pins
// MeanHeadOutputs' layout and AblateHead's fill. Both paths.
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
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, HeadMask: true})
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		defer vm.Close()
		run(t, vm)
		intact := floats(t, g.Logits)
		means, err := g.MeanHeadOutputs(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, fill := range []string{"mean", "zero"} {
			for l := range cfg.Layers {
				for h := range cfg.Heads {
					f := means[l][h]
					if fill == "zero" {
						f = nil
					}
					if err := g.AblateHead(l, h, f); err != nil {
						t.Fatal(err)
					}
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
		if err := g.ResetHeads(); err != nil {
			t.Fatal(err)
		}
		run(t, vm)
		if diff := graphtest.MaxAbsDiff(t, floats(t, g.Logits), intact); diff != 0 {
			t.Errorf("after ResetHeads the logits differ from the intact run by %g", diff)
		}
	})
}

// TestAblationErrors: the ablation methods refuse a graph without the mask
// and a head or fill that does not fit, naming the numbers.
func TestAblationErrors(t *testing.T) {
	cfg := testConfig(false, layers.Fused)
	m, err := New(cfg, tensor.Float64, 5)
	if err != nil {
		t.Fatal(err)
	}
	plain := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 4})
	masked := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 4, HeadMask: true})
	for _, c := range []struct {
		err  error
		want string
	}{
		{plain.ResetHeads(), "built without HeadMask"},
		{plain.AblateHead(0, 0, nil), "built without HeadMask"},
		{masked.AblateHead(2, 0, nil), "layer 2 head 0 outside the model's 2 layers of 2 heads"},
		{masked.AblateHead(0, -1, nil), "layer 0 head -1 outside"},
		{masked.AblateHead(0, 1, make([]float64, 5)), "fill of 5 values, want T*d = 4*4 = 16"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", c.err, c.want)
		}
	}
	if _, err := masked.MeanHeadOutputs(2); err == nil || !strings.Contains(err.Error(), "2 rows, want 1..1") {
		t.Errorf("MeanHeadOutputs of more rows than the batch: %v", err)
	}
	if _, err := masked.MeanHeadOutputs(1); err == nil || !strings.Contains(err.Error(), "run the machine first") {
		t.Errorf("MeanHeadOutputs before a run: %v", err)
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
