package layers

// Tests pinning Gorgonia v0.9.18 behaviour this package designs around
// (docs/gorgonia.md lists each with its test). Each asserts the CURRENT
// upstream behaviour, so a failure after an upgrade means the workaround may
// no longer be needed (or needs a second look), not that this package broke.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/ops"
)

// builtinSoftmaxRows runs gorgonia's SoftMax (or LogSoftMax) along the last
// axis of the float32 matrix [[0 0 0] [95 0 0]]. The kernel seeds each row's
// max with the tensor's first element (0) and then skips the row's own first
// element, so row 1 computes exp(95) = +Inf in float32.
func builtinSoftmaxRows(t *testing.T, log bool) []float64 {
	t.Helper()
	g := gorgonia.NewGraph()
	x := gorgonia.NewMatrix(g, tensor.Float32, gorgonia.WithShape(2, 3), gorgonia.WithName("x"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float32{0, 0, 0, 95, 0, 0}))))
	var y *gorgonia.Node
	var err error
	if log {
		y, err = gorgonia.LogSoftMax(x, 1)
	} else {
		y, err = gorgonia.SoftMax(x, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Run(t, g)
	return graphtest.Values(t, y)
}

// TestUpstreamSoftmaxLastAxisBug pins that the built-in last-axis SoftMax
// gives [NaN 0 0] for the float32 row [95 0 0] when it is not the tensor's
// first row (true answer ~[1 5.6e-42 5.6e-42]), which is why MaskedSoftmax
// exists; MaskedSoftmax gets the same rows right.
func TestUpstreamSoftmaxLastAxisBug(t *testing.T) {
	y := builtinSoftmaxRows(t, false)
	if !math.IsNaN(y[3]) || y[4] != 0 || y[5] != 0 {
		t.Errorf("gorgonia.SoftMax row [95 0 0] = %v: the upstream NaN bug changed; re-check docs/gorgonia.md", y[3:])
	}
	scores := tensor.New(tensor.WithShape(1, 1, 3, 3), tensor.WithBacking([]float32{0, 0, 0, 95, 0, 0, 0, 0, 0}))
	g := gorgonia.NewGraph()
	w := graphtest.Must(t)(ops.MaskedSoftmax(NewParam(g, "scores", scores), nil, ops.Mask{}, 1))
	graphtest.Run(t, g)
	ours := graphtest.Values(t, w)
	if ours[3] != 1 || ours[4] > 1e-40 || ours[5] > 1e-40 {
		t.Errorf("MaskedSoftmax row [95 0 0] = %v, want [1 ~0 ~0]", ours[3:6])
	}
}

// TestUpstreamLogSoftmaxLastAxisBug pins that the built-in LogSoftMax shares
// the kernel: the row [95 0 0] gives -Inf everywhere instead of the true
// [~0 -95 -95], which is why CrossEntropy is one fused op.
func TestUpstreamLogSoftmaxLastAxisBug(t *testing.T) {
	y := builtinSoftmaxRows(t, true)
	for _, v := range y[3:] {
		if !math.IsInf(v, -1) {
			t.Errorf("gorgonia.LogSoftMax row [95 0 0] = %v: the upstream bug changed; re-check docs/gorgonia.md", y[3:])
			break
		}
	}
}

// TestUpstreamUnnamedInputsMerge pins that two unnamed same-shape matrices
// become one node (so unnamed Wq and Wk would share a tensor), and that
// distinct names keep them apart, which is why every input here is named.
func TestUpstreamUnnamedInputsMerge(t *testing.T) {
	g := gorgonia.NewGraph()
	a := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3))
	b := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3))
	if a != b {
		t.Error("unnamed same-shape NewMatrix nodes no longer merge: re-check docs/gorgonia.md")
	}
	c := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("wq"))
	d := gorgonia.NewMatrix(g, tensor.Float64, gorgonia.WithShape(3, 3), gorgonia.WithName("wk"))
	if c == d {
		t.Error("differently named NewMatrix nodes merged")
	}
}

// TestUpstreamByIndicesOutOfRange pins that ByIndices returns row 0 for an
// id past the table instead of failing, which is why model.Graph.Feed
// validates ids.
func TestUpstreamByIndicesOutOfRange(t *testing.T) {
	g := gorgonia.NewGraph()
	table := NewParam(g, "table", tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6})))
	ids := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(2), gorgonia.WithName("ids"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{2, 7}))))
	rows, err := gorgonia.ByIndices(table, ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Errorf("ByIndices with id 7 of 3 now fails (%v): upstream changed; re-check docs/gorgonia.md", err)
		return
	}
	got, want := graphtest.Values(t, rows), []float64{5, 6, 1, 2}
	if graphtest.MaxAbsDiff(t, got, want) != 0 {
		t.Errorf("ByIndices(ids [2 7]) = %v, pinned upstream behaviour %v", got, want)
	}
}

// TestUpstreamInverseSqrtGradient pins that InverseSqrt's gradient is
// -dy / (2 y^3) instead of -dy y^3 / 2 (y = 1/sqrt(x)): at x = 4 it gives -4
// where d/dx x^(-1/2) = -1/16. That is why the Gorgonia-path LayerNorm and
// RMSNorm divide by Sqrt(var + eps) instead of multiplying by InverseSqrt.
func TestUpstreamInverseSqrtGradient(t *testing.T) {
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{4})))
	y := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.InverseSqrt(x))))
	grads, err := gorgonia.Grad(y, x)
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Run(t, g)
	if got := graphtest.Values(t, grads[0])[0]; got != -4 {
		t.Errorf("d InverseSqrt(x)/dx at 4 = %v, pinned upstream value -4 (true -0.0625): the bug changed; re-check the Gorgonia-path LayerNorm and RMSNorm", got)
	}
}

// TestUpstreamGradDifferentiatesConstants pins that Grad(Sum(x ⊙ c), x) also
// adds the gradient with respect to the input c (an op node that nothing
// reads), and that a TapeMachine on the whole graph runs it, while one on
// ExactSubgraphRoots(y, dy/dx) does not. That is why model.Build keeps only the subgraph the
// outputs and gradients need.
func TestUpstreamGradDifferentiatesConstants(t *testing.T) {
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 2})))
	c := gorgonia.NewVector(g, tensor.Float64, gorgonia.WithShape(2), gorgonia.WithName("c"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{3, 4}))))
	y := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(x, c))))
	grads, err := gorgonia.Grad(y, x)
	if err != nil {
		t.Fatal(err)
	}
	var dead []*gorgonia.Node
	for _, n := range g.AllNodes() {
		if n.Op() != nil && n != y && n != grads[0] && g.To(n.ID()).Len() == 0 {
			dead = append(dead, n)
		}
	}
	if len(dead) != 1 {
		t.Fatalf("op nodes nothing reads besides y and dy/dx: %v; pinned upstream behaviour: one, dy/dc", dead)
	}
	sub := gorgonia.NewTapeMachine(g.ExactSubgraphRoots(y, grads[0]))
	defer sub.Close()
	if err := sub.RunAll(); err != nil {
		t.Fatal(err)
	}
	if got := graphtest.Values(t, grads[0]); got[0] != 3 || got[1] != 4 || dead[0].Value() != nil {
		t.Errorf("on the pruned subgraph dy/dx = %v, want [3 4], and dy/dc = %v, want not run", got, dead[0].Value())
	}
	graphtest.Run(t, g)
	if got := graphtest.Values(t, dead[0]); got[0] != 1 || got[1] != 2 {
		t.Errorf("a TapeMachine on the whole graph: dy/dc = %v, pinned upstream behaviour: run, [1 2]", got)
	}
}

// TestUpstreamBatchedMatMul2D pins that BatchedMatMul takes 2-D operands
// (no batch axes: one product) with its transpose flags, forward and
// backward: y = x W^T with transB equals Mul(x, Transpose(W)), and the
// gradients of Sum(y ⊙ y) with respect to x and W equal Mul's, with no
// Transpose node in either direction. That is why the Gorgonia-path Linear
// multiplies with BatchedMatMul(x, W, false, true) instead of copying W^T
// every step (Mul has no transpose flags).
func TestUpstreamBatchedMatMul2D(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	xv, wv := graphtest.RandDense(rng, 1, 5, 4), graphtest.RandDense(rng, 1, 3, 4)
	type result struct {
		y, dx, dw  []float64
		transposes int
	}
	run := func(flag bool) result {
		g := gorgonia.NewGraph()
		x, w := NewParam(g, "x", xv.Clone().(*tensor.Dense)), NewParam(g, "w", wv.Clone().(*tensor.Dense))
		must := graphtest.Must(t)
		var y *gorgonia.Node
		if flag {
			y = must(gorgonia.BatchedMatMul(x, w, false, true)) // (5, 3)
		} else {
			y = must(gorgonia.Mul(x, must(gorgonia.Transpose(w)))) // (5, 3)
		}
		loss := must(gorgonia.Sum(must(gorgonia.HadamardProd(y, y))))
		grads, err := gorgonia.Grad(loss, x, w)
		if err != nil {
			t.Fatal(err)
		}
		graphtest.Run(t, g)
		r := result{y: graphtest.Values(t, y), dx: graphtest.Values(t, grads[0]), dw: graphtest.Values(t, grads[1])}
		for _, n := range g.AllNodes() {
			if strings.HasPrefix(fmt.Sprint(n.Op()), "Aᵀ{") {
				r.transposes++
			}
		}
		if !y.Shape().Eq(tensor.Shape{5, 3}) || !grads[1].Shape().Eq(tensor.Shape{3, 4}) {
			t.Fatalf("y %v, dW %v: want (5, 3) and (3, 4)", y.Shape(), grads[1].Shape())
		}
		return r
	}
	flag, mul := run(true), run(false)
	if flag.transposes != 0 || mul.transposes != 2 {
		t.Errorf("Transpose nodes: %d with BatchedMatMul's flag, %d with Mul; pinned 0 and 2", flag.transposes, mul.transposes)
	}
	for _, c := range []struct {
		what      string
		got, want []float64
	}{{"x W^T", flag.y, mul.y}, {"d x", flag.dx, mul.dx}, {"d W", flag.dw, mul.dw}} {
		if d := graphtest.MaxAbsDiff(t, c.got, c.want); d > 1e-12 {
			t.Errorf("2-D BatchedMatMul with transB: %s differs from Mul's by %g; upstream changed, re-check the Gorgonia-path Linear", c.what, d)
		}
	}
}

// TestUpstreamSigmoidSaturates pins that Gorgonia's Sigmoid is exactly 1
// above 19 in float64 (at 19.5 the true value is 1 - 3.4e-9) and above 15
// in float32 (at 15.5, 1 - 1.9e-7, which float32 holds as 0.99999982): so
// SwiGLU's Gorgonia path gives silu(z) = z there, and the paths agree only
// for gates below; ops.SwiGLU keeps the last bits, z sigmoid(z) < z.
func TestUpstreamSigmoidSaturates(t *testing.T) {
	for _, c := range []struct {
		dt tensor.Dtype
		z  float64
	}{{tensor.Float64, 19.5}, {tensor.Float32, 15.5}} {
		g := gorgonia.NewGraph()
		z := constant(g, c.dt, "z", []float64{c.z}, 1, 1)
		s := graphtest.Must(t)(gorgonia.Sigmoid(z))
		silu := graphtest.Must(t)(ops.SwiGLU(z, constant(g, c.dt, "one", []float64{1}, 1, 1)))
		graphtest.Run(t, g)
		if got := graphtest.Values(t, s)[0]; got != 1 {
			t.Errorf("%v gorgonia.Sigmoid(%v) = %v, not 1: the upstream clamp changed; re-check docs/gorgonia.md", c.dt, c.z, got)
		}
		if got := graphtest.Values(t, silu)[0]; !(got < c.z) {
			t.Errorf("%v ops.SwiGLU(%v, 1) = %v, want below %v", c.dt, c.z, got, c.z)
		}
	}
}

// TestGorgoniaGELUNeedsErf says why the Gorgonia path's exact GELU is
// built around ops.Erf: Gorgonia v0.9.18 has no erf among its element-wise
// functions (abs, sign, ceil, floor, sin, cos, exp, log, log2, neg, square,
// sqrt, inverse, inverse sqrt, cube, tanh, sigmoid, log1p, expm1,
// softplus), and the GELUs they build are approximations: over [-6, 6] the
// tanh form (Tanh and Cube) is off by 4.7e-4 and x sigmoid(1.702 x) by
// 2.0e-2, where the paths must agree within 1e-12.
// geluErfGorgonia is within 1e-15 of 0.5 x (1 + math.Erf(x / sqrt 2)).
func TestGorgoniaGELUNeedsErf(t *testing.T) {
	var x, exact []float64
	for v := -6.0; v <= 6; v += 1.0 / 64 {
		x, exact = append(x, v), append(exact, 0.5*v*(1+math.Erf(v/math.Sqrt2)))
	}
	g := gorgonia.NewGraph()
	xn := constant(g, tensor.Float64, "x", x, 1, len(x))
	scaled := graphtest.Must(t)(gorgonia.Mul(xn, scalar(g, tensor.Float64, 1.702)))
	forms := []struct {
		name     string
		y        *gorgonia.Node
		min, max float64 // bounds on the largest difference from the exact GELU
	}{
		{"tanh form", geluGorgonia(xn, "tanh"), 1e-4, math.Inf(1)},
		{"x sigmoid(1.702 x)", graphtest.Must(t)(gorgonia.HadamardProd(xn, graphtest.Must(t)(gorgonia.Sigmoid(scaled)))), 1e-2, math.Inf(1)},
		{"erf form with ops.Erf", geluErfGorgonia(xn, "erf"), 0, 1e-15},
	}
	graphtest.Run(t, g)
	for _, f := range forms {
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, f.y), exact); !(e > f.min && e <= f.max) {
			t.Errorf("%s differs from the exact GELU by %.3g, want in (%g, %g]", f.name, e, f.min, f.max)
		}
	}
}
