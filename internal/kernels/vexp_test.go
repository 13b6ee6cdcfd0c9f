package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpShift compares ExpShift on every path with math.Exp in float64 for every length
// from 0 to 40 (whole groups of eight and masked tails), arguments a from
// -90 to 10: relative error <= 4e-7 + |a| 1.2e-7 (a few float32 ulps, plus
// the float32 rounding of a itself) where exp >= 1e-37, absolute <= 2e-38
// below that; the returned sum within 1e-6 relative of the float64 sum; and
// y past len(x) untouched. A NaN argument gives NaN, -Inf gives 0.
func TestExpShift(t *testing.T) { forEachPath(t, testExpShift) }

func testExpShift(t *testing.T) {
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
		sum := ExpShift(x, y[:n], scale, shift)
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
			ExpShift(x, y[:n], scale, shift)
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

// TestRowKernels compares MaxOf, ScaleBy, AddTo and SoftmaxGradRow on every path with plain
// float64 loops for every length from 1 to 40 (vector part and tail):
// max, scale and sum exact, the gradient within 1e-6 relative to sum |y dy| +
// |y dy| (float32 rounding of the dot product and the products).
func TestRowKernels(t *testing.T) { forEachPath(t, testRowKernels) }

func testRowKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for n := 1; n <= 40; n++ {
		y, dy, dx := make([]float32, n), make([]float32, n), make([]float32, n)
		var dot, scale float64
		for i := range y {
			y[i], dy[i] = float32(rng.Float64()), float32(rng.NormFloat64())
			dot += float64(y[i]) * float64(dy[i])
			scale += math.Abs(float64(y[i]) * float64(dy[i]))
		}
		want := y[0]
		for _, v := range y {
			want = max(want, v)
		}
		if got := MaxOf(y); got != want {
			t.Fatalf("n %d: MaxOf = %v, want %v", n, got, want)
		}
		SoftmaxGradRow(y, dy, dx, 0.5)
		for i := range y {
			ref := 0.5 * float64(y[i]) * (float64(dy[i]) - dot)
			if math.Abs(float64(dx[i])-ref) > 1e-6*(scale+math.Abs(float64(y[i]*dy[i]))) {
				t.Fatalf("n %d: dx[%d] = %v, want %v", n, i, dx[i], ref)
			}
		}
		scaled := append([]float32(nil), y...)
		ScaleBy(scaled, 3)
		for i, v := range scaled {
			if v != y[i]*3 {
				t.Fatalf("n %d: ScaleBy gives %v at %d, want %v", n, v, i, y[i]*3)
			}
		}
		sum := make([]float32, n)
		AddTo(y, dy, sum)
		for i, v := range sum {
			if v != y[i]+dy[i] {
				t.Fatalf("n %d: AddTo gives %v at %d, want %v", n, v, i, y[i]+dy[i])
			}
		}
	}
}
