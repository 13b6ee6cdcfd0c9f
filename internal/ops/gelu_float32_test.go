package ops

import (
	"math"
	"testing"

	"github.com/attnscope/attnscope/internal/kernels"
)

// TestGELUFloat32MatchesFloat64: the float32 kernels (vector exp, sigmoid
// form) against the float64 tanh definition, on a fine grid over [-12, 12]
// (past that GELU is 0 or x to float32 precision), the tails, zero and NaN.
// Tolerance: 1e-7 of max(1, |x|) absolute (a float32 rounding of the
// terms) plus 5e-7 relative, for GELU and for its derivative (measured: at
// most 0.23 and 0.45 of it); the length leaves partial blocks and vectors.
func TestGELUFloat32MatchesFloat64(t *testing.T) {
	var x []float32
	for v := -12.0; v <= 12; v += 1.0 / 512 {
		x = append(x, float32(v))
	}
	x = append(x, -1e4, -100, -30, -10.5, 30, 100, 1e4, 1e12, 0, float32(math.Copysign(0, -1)), 1e-20, -1e-20)
	x = append(x, x[:37]...) // a length that is no multiple of 8 or of the kernel's 256-element block
	x64, dy64 := make([]float64, len(x)), make([]float64, len(x))
	dy := make([]float32, len(x))
	for i, v := range x {
		x64[i] = float64(v)
		dy[i] = float32(1 + 0.25*math.Sin(float64(i)))
		dy64[i] = float64(dy[i])
	}
	y, dx := make([]float32, len(x)), make([]float32, len(x))
	y64, dx64 := make([]float64, len(x)), make([]float64, len(x))
	kernels.GELU(x, y)
	kernels.GELUGrad(x, dy, dx)
	for i, v := range x64 {
		y64[i], dx64[i] = geluTanh(v), dy64[i]*geluTanhGrad(v)
	}
	worst := func(got []float32, want []float64) (float64, int) {
		w, at := 0.0, -1
		for i := range got {
			tol := 1e-7*max(1, math.Abs(x64[i])) + 5e-7*math.Abs(want[i])
			if e := math.Abs(float64(got[i])-want[i]) / tol; !(e <= w) {
				w, at = e, i
			}
		}
		return w, at
	}
	if w, i := worst(y, y64); w > 1 {
		t.Errorf("GELU(%v) = %v, float64 %v: %.2g x the tolerance", x[i], y[i], y64[i], w)
	}
	if w, i := worst(dx, dx64); w > 1 {
		t.Errorf("dy GELU'(%v) = %v, float64 %v: %.2g x the tolerance", x[i], dx[i], dx64[i], w)
	}
	nan := []float32{float32(math.NaN())}
	out := []float32{0}
	if kernels.GELU(nan, out); !math.IsNaN(float64(out[0])) {
		t.Errorf("GELU(NaN) = %v, want NaN", out[0])
	}
	if kernels.GELUGrad(nan, []float32{1}, out); !math.IsNaN(float64(out[0])) {
		t.Errorf("GELU'(NaN) = %v, want NaN", out[0])
	}
}
