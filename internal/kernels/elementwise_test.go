package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestElementwiseSameBits: MulTo, SubTo, DivTo and ScaleTo equal plain Go
// loops bit for bit on every path, for every length from 1 to 40 (vector
// part and tail), with z a separate slice and z the same as x.
func TestElementwiseSameBits(t *testing.T) { forEachPath(t, testElementwiseSameBits) }

func testElementwiseSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	kernels := []struct {
		name string
		run  func(x, y, z []float32)
		ref  func(a, b float32) float32
	}{
		{"MulTo", MulTo, func(a, b float32) float32 { return a * b }},
		{"SubTo", SubTo, func(a, b float32) float32 { return a - b }},
		{"DivTo", DivTo, func(a, b float32) float32 { return a / b }},
		{"ScaleTo by 0.7", func(x, _, z []float32) { ScaleTo(x, 0.7, z) }, func(a, _ float32) float32 { return a * 0.7 }},
	}
	for n := 1; n <= 40; n++ {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		for _, k := range kernels {
			want := make([]float32, n)
			for i := range want {
				want[i] = k.ref(x[i], y[i])
			}
			z := make([]float32, n)
			k.run(x, y, z)
			inPlace := slices.Clone(x)
			k.run(inPlace, y, inPlace)
			for i := range want {
				if math.Float32bits(z[i]) != math.Float32bits(want[i]) || math.Float32bits(inPlace[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d: %s gives %v (in place %v) at %d, want %v", n, k.name, z[i], inPlace[i], i, want[i])
				}
			}
		}
	}
}
