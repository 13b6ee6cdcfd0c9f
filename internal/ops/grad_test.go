package ops

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestGradientsMatchFiniteDifferences: for every op of the package, the
// gradient its grad method builds, of cost = sum(c * op(inputs)) with c
// random (the scalar output itself for CrossEntropy), with respect to every
// differentiable input, against central differences entry by entry, in
// float64 (graphtest.FiniteDifferences: h = 1e-6, per input
// ||g - fd||_2 < 1e-7 ||fd||_2). Causal and key masks
// hide entries, Embedding repeats an id, CrossEntropy weights positions
// 0, 0.5 and 1, so every branch of every gradient kernel is taken.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	rnd := func(shape ...int) *tensor.Dense { return graphtest.RandDense(rng, 1, shape...) }
	ints := func(g *gorgonia.ExprGraph, name string, v ...int) *gorgonia.Node {
		return gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(len(v)), gorgonia.WithName(name),
			gorgonia.WithValue(tensor.New(tensor.WithShape(len(v)), tensor.WithBacking(v))))
	}
	dense := func(shape []int, v ...float64) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	heads := Heads{B: 2, T: 3, H: 2, D: 2}
	for _, c := range []struct {
		name string
		// build returns the op's output and the inputs to differentiate.
		build func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error)
	}{
		{"Add", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			a, b := p("a", rnd(3, 4)), p("b", rnd(3, 4))
			y, err := Add(a, b)
			return y, gorgonia.Nodes{a, b}, err
		}},
		{"GELU", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := p("x", graphtest.RandDense(rng, 2, 3, 5))
			y, err := GELU(x)
			return y, gorgonia.Nodes{x}, err
		}},
		{"SoftCap", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := p("x", graphtest.RandDense(rng, 2, 2, 3, 2, 2)) // scores (B, H, T, T) reaching where tanh bends
			y, err := SoftCap(x, 0.6, 1.5)
			return y, gorgonia.Nodes{x}, err
		}},
		{"GeGLU", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			gate, up := p("gate", graphtest.RandDense(rng, 2, 3, 5)), p("up", rnd(3, 5))
			y, err := GeGLU(gate, up)
			return y, gorgonia.Nodes{gate, up}, err
		}},
		{"LayerNorm", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w, b := p("x", rnd(4, 6)), p("w", rnd(6)), p("b", rnd(6))
			y, err := LayerNorm(x, w, b, 1e-5)
			return y, gorgonia.Nodes{x, w, b}, err
		}},
		{"LayerNormNoBias", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := p("x", rnd(4, 6)), p("w", rnd(6))
			y, err := LayerNorm(x, w, nil, 1e-5)
			return y, gorgonia.Nodes{x, w}, err
		}},
		{"RMSNorm", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := p("x", rnd(4, 6)), p("w", rnd(6))
			y, err := RMSNorm(x, w, 1e-5)
			return y, gorgonia.Nodes{x, w}, err
		}},
		{"Linear", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w, b := p("x", rnd(4, 5)), p("w", rnd(3, 5)), p("b", rnd(3))
			y, err := Linear(x, w, b)
			return y, gorgonia.Nodes{x, w, b}, err
		}},
		{"LinearNoBias", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x, w := p("x", rnd(4, 5)), p("w", rnd(3, 5))
			y, err := Linear(x, w, nil)
			return y, gorgonia.Nodes{x, w}, err
		}},
		{"Embedding", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			table := p("table", rnd(5, 3))
			y, err := Embedding(table, ints(g, "ids", 1, 4, 1, 0))
			return y, gorgonia.Nodes{table}, err
		}},
		{"CrossEntropy", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			logits := p("logits", graphtest.RandDense(rng, 2, 4, 5))
			y, err := CrossEntropy(logits, ints(g, "targets", 2, 0, 4, 1), p("mask", dense([]int{4}, 1, 0, 0.5, 1)))
			return y, gorgonia.Nodes{logits}, err
		}},
		{"MaskedSoftmax/causal,keymask", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			s := p("scores", rnd(2, 2, 4, 4))
			y, err := MaskedSoftmax(s, p("key_mask", dense([]int{2, 4}, 1, 0, 1, 1, 0, 1, 1, 0)), Mask{Causal: true}, 0.7)
			return y, gorgonia.Nodes{s}, err
		}},
		{"MaskedSoftmax/full", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			s := p("scores", rnd(2, 2, 4, 4))
			y, err := MaskedSoftmax(s, nil, Mask{}, 1.3)
			return y, gorgonia.Nodes{s}, err
		}},
		{"MaskedSoftmax/window,alibi,keymask", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			s := p("scores", rnd(2, 2, 5, 5))
			y, err := MaskedSoftmax(s, p("key_mask", dense([]int{2, 5}, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1)), Mask{Causal: true, Window: 3, Slopes: []float64{0.5, 0.25}}, 0.7)
			return y, gorgonia.Nodes{s}, err
		}},
		{"MaskedSoftmax/bidirectional window", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			s := p("scores", rnd(1, 2, 5, 5))
			y, err := MaskedSoftmax(s, nil, Mask{Window: 2}, 1.1)
			return y, gorgonia.Nodes{s}, err
		}},
		{"MaskScores/window,alibi,keymask then MaskedSoftmax", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			// The masked scores hold -Inf, which no cost of them survives:
			// the softmax that reads them in the forward (scale 1, no
			// slopes) makes the cost, as MaskedSoftmax alone does above.
			s := p("scores", rnd(2, 2, 5, 5))
			keep := p("key_mask", dense([]int{2, 5}, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1))
			masked, err := MaskScores(s, keep, Mask{Causal: true, Window: 3, Slopes: []float64{0.5, 0.25}}, 0.7)
			if err != nil {
				return nil, nil, err
			}
			y, err := MaskedSoftmax(masked, keep, Mask{Causal: true, Window: 3}, 1)
			return y, gorgonia.Nodes{s}, err
		}},
		{"Hook", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := p("x", rnd(3, 4))
			y, err := Hook(x, "x", func(*tensor.Dense) error { return nil })
			return y, gorgonia.Nodes{x}, err
		}},
		{"Rotary", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv := p("qkv", rnd(3, heads.B, heads.H, heads.T, heads.D))
			y, err := Rotary(qkv, RotaryFrequencies(10, heads.D), 2)
			return y, gorgonia.Nodes{qkv}, err
		}},
		{"Rotary/partial", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv := p("qkv", rnd(3, heads.B, heads.H, heads.T, 4))
			y, err := Rotary(qkv, []float64{0.8}, 2) // (3, B, H, T, 4): one pair (0, 1) turns, channels 2, 3 pass
			return y, gorgonia.Nodes{qkv}, err
		}},
		{"QKNorm", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv, wq, wk := p("qkv", rnd(3, (2+2*2)*4)), p("wq", rnd(4)), p("wk", rnd(4))
			y, err := QKNorm(qkv, wq, wk, 2, 2, 1e-5)
			return y, gorgonia.Nodes{qkv, wq, wk}, err
		}},
		{"QKNorm/grouped", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv, wq, wk := p("qkv", rnd(3, (4+2*1)*2)), p("wq", rnd(2)), p("wk", rnd(2))
			y, err := QKNorm(qkv, wq, wk, 4, 1, 0.3)
			return y, gorgonia.Nodes{qkv, wq, wk}, err
		}},
		{"QKNorm/whole projection", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv, wq, wk := p("qkv", rnd(3, (4+2*2)*2)), p("wq", rnd(4*2)), p("wk", rnd(2*2)) // OLMo 2's: wq (H*d), wk (G*d)
			y, err := QKNorm(qkv, wq, wk, 4, 2, 1e-5)
			return y, gorgonia.Nodes{qkv, wq, wk}, err
		}},
		{"SplitGroupedHeads", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			s := Heads{B: 2, T: 3, H: 4, D: 2}
			x := p("x", rnd(s.B*s.T, (s.H+2*2)*s.D))
			y, err := SplitGroupedHeads(x, s, 2)
			return y, gorgonia.Nodes{x}, err
		}},
		{"ConcatColumns", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			a, b := p("a", rnd(3, 2)), p("b", rnd(3, 4))
			y, err := ConcatColumns(a, b)
			return y, gorgonia.Nodes{a, b}, err
		}},
		{"SplitHeads", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := p("x", rnd(heads.B*heads.T, 3*heads.H*heads.D))
			y, err := SplitHeads(x, heads, 3)
			return y, gorgonia.Nodes{x}, err
		}},
		{"MergeHeads", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			x := p("x", rnd(heads.B, heads.H, heads.T, heads.D))
			y, err := MergeHeads(x)
			return y, gorgonia.Nodes{x}, err
		}},
		{"AttnScores", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			qkv := p("qkv", rnd(3, heads.B, heads.H, heads.T, heads.D))
			y, err := AttnScores(qkv)
			return y, gorgonia.Nodes{qkv}, err
		}},
		{"AttnApply", func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
			w, qkv := p("w", rnd(heads.B, heads.H, heads.T, heads.T)), p("qkv", rnd(3, heads.B, heads.H, heads.T, heads.D))
			y, err := AttnApply(w, qkv)
			return y, gorgonia.Nodes{w, qkv}, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) { checkGradients(t, rng, c.build) })
	}
}

// checkGradients builds an op (build returns its output and the inputs to
// differentiate) and compares the gradients of sum(c * y), c random (of y
// itself for a scalar y), with central differences.
func checkGradients(t *testing.T, rng *rand.Rand, build func(g *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error)) {
	t.Helper()
	g := gorgonia.NewGraph()
	p := func(name string, v *tensor.Dense) *gorgonia.Node { return graphtest.Param(g, name, v) }
	y, wrt, err := build(g, p)
	if err != nil {
		t.Fatal(err)
	}
	cost := y
	if y.Dims() > 0 {
		cost = graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, p("c", graphtest.RandDense(rng, 1, y.Shape()...))))))
	}
	eval, grads := graphtest.Gradients(t, g, cost, wrt)
	graphtest.FiniteDifferences(t, wrt, grads, eval)
}
