package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// runAll builds m's graph of b rows of tt positions on path with opts,
// runs it on one random batch (seed 7) and returns it.
func runAll(t *testing.T, m *Model, path layers.Path, b, tt int, opts BuildOptions) *Graph {
	t.Helper()
	onPath := *m
	onPath.Config.Attention = string(path)
	opts.Batch, opts.SeqLen = b, tt
	g, err := Build(&onPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(7, 7)), b*tt, m.Config.Vocab)
	feedRun(t, g, tokens, targets, mask)
	return g
}

// activation is the named activation of g as float64s, failing when it has
// no value or not the shape its spec says.
func activation(t *testing.T, g *Graph, name string) []float64 {
	t.Helper()
	v, err := g.Activation(name)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := g.ActivationSpec(name)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Shape().Eq(spec.Shape) {
		t.Fatalf("%s: shape %v, its spec says %v", name, v.Shape(), spec.Shape)
	}
	return toFloat64s(v)
}

// TestActivationsAgreeAcrossPaths: on every configuration of the PyTorch
// fixtures (float64), a graph caching every activation ("*") builds on
// both paths, each activation has its spec's shape, and the fused path's
// values equal the Gorgonia path's within 1e-12 of the largest; the logits
// of the graph that caches everything equal those of a plain graph
// within the same bound.
func TestActivationsAgreeAcrossPaths(t *testing.T) {
	for _, name := range torchFixtures {
		t.Run(name, func(t *testing.T) {
			f := loadTorchFixture(t, name)
			m := torchModel(t, f, tensor.Float64)
			const b, tt = 2, 4
			fused := runAll(t, m, layers.Fused, b, tt, BuildOptions{Cache: []string{"*"}})
			gorg := runAll(t, m, layers.Gorgonia, b, tt, BuildOptions{Cache: []string{"*"}})
			if len(fused.Opts.Cache) != len(fused.specs) {
				t.Fatalf("\"*\" resolved to %d activations of %d", len(fused.Opts.Cache), len(fused.specs))
			}
			for _, act := range fused.Opts.Cache {
				within(t, act, activation(t, fused, act), activation(t, gorg, act), 1e-12)
			}
			plain := runAll(t, m, layers.Fused, b, tt, BuildOptions{})
			within(t, "logits of a plain graph", floats(t, fused.Logits), floats(t, plain.Logits), 1e-12)
		})
	}
}

// within fails unless got and want have one length and differ by at most
// tol times the largest |want| (at least 1); -Inf must meet -Inf.
func within(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, w := range want {
		if !math.IsInf(w, 0) {
			scale = math.Max(scale, math.Abs(w))
		}
	}
	for i := range want {
		if math.IsInf(want[i], 0) || math.IsInf(got[i], 0) {
			if got[i] != want[i] {
				t.Errorf("%s: value %d is %v, want %v", what, i, got[i], want[i])
				return
			}
			continue
		}
		if d := math.Abs(got[i] - want[i]); !(d <= tol*scale) {
			t.Errorf("%s: value %d is %v, want %v (tolerance %g of %.3g)", what, i, got[i], want[i], tol, scale)
			return
		}
	}
}

// TestGradientsWithEveryActivation: a Train graph that caches every
// activation (the fused path building its attention cores and norms on
// the Gorgonia path where they are asked, the scores through
// ops.MaskScores) has the gradients of a plain Train graph within 1e-10 of
// the largest, on both paths, float64, on the configurations of
// hookFixtures (ops.MaskScores' and the hook's own gradients are held to
// central differences in internal/ops).
func TestGradientsWithEveryActivation(t *testing.T) {
	for _, name := range hookFixtures {
		m := torchModel(t, loadTorchFixture(t, name), tensor.Float64)
		for _, path := range layers.Paths {
			t.Run(name+"/"+string(path), func(t *testing.T) {
				plain := runAll(t, m, path, 2, 4, BuildOptions{Train: true})
				every := runAll(t, m, path, 2, 4, BuildOptions{Train: true, Cache: []string{"*"}})
				want, err := plain.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				got, err := every.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					within(t, m.Params[i].Name, toFloat64s(got[i]), toFloat64s(want[i]), 1e-10)
				}
			})
		}
	}
}
