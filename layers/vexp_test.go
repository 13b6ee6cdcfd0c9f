package layers

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpShift compares expShift with math.Exp in float64 for every length
// from 0 to 40 (whole groups of eight and masked tails), arguments a from
// -90 to 10: relative error <= 4e-7 + |a| 1.2e-7 (a few float32 ulps, plus
// the float32 rounding of a itself) where exp >= 1e-37, absolute <= 2e-38
// below that; the returned sum within 1e-6 relative of the float64 sum; and
// y past len(x) untouched. A NaN argument gives NaN, -Inf gives 0.
func TestExpShift(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const scale, shift = 0.75, 3.5
	for n := 0; n <= 40; n++ {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.Float64()*100-90)/scale + shift
		}
		y := make([]float32, n+9)
		for i := range y {
			y[i] = -1
		}
		sum := expShift(x, y[:n], scale, shift)
		var want float64
		for i, v := range x {
			a := float64(scale) * (float64(v) - float64(shift))
			e := math.Exp(a)
			want += e
			got := float64(y[i])
			if e >= 1e-37 && math.Abs(got-e) > (4e-7+math.Abs(a)*1.2e-7)*e || e < 1e-37 && math.Abs(got-e) > 2e-38 {
				t.Fatalf("n %d: exp(%v*(%v - %v)) = %v, want %v", n, scale, v, shift, got, e)
			}
		}
		if math.Abs(float64(sum)-want) > 1e-6*want {
			t.Errorf("n %d: sum %v, want %v", n, sum, want)
		}
		if n > 0 {
			x[0], x[n-1] = float32(math.NaN()), float32(math.Inf(-1))
			if n == 1 {
				x[0] = float32(math.NaN())
			}
			expShift(x, y[:n], scale, shift)
			if !math.IsNaN(float64(y[0])) || n > 1 && y[n-1] != 0 {
				t.Fatalf("n %d: exp(NaN) = %v, exp(-Inf) = %v", n, y[0], y[n-1])
			}
		}
		for i := n; i < len(y); i++ {
			if y[i] != -1 {
				t.Fatalf("n %d: y[%d] written", n, i)
			}
		}
	}
}
