package layers

// Tests pinning the Gorgonia v0.9.18 facts the MLP activations design
// around, as upstream_test.go's.

import (
	"math"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/ops"
)

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
