package model

import (
	"math"
	"testing"
)

// TestFirstNonFinite: the first NaN or infinity of a slice long enough to
// be searched on every core, wherever the others lie; -1 when every value
// is finite (the largest float and -0 included, twice in one block, whose
// vector sum overflows), in float64 and float32.
func TestFirstNonFinite(t *testing.T) {
	const n = 3_000_000
	cases := []struct {
		name string
		bad  map[int]float64
		want int
	}{
		{"none", nil, -1},
		{"NaN first", map[int]float64{0: math.NaN(), 2_900_000: math.Inf(1)}, 0},
		{"late chunk only", map[int]float64{n - 1: math.Inf(-1)}, n - 1},
		{"two chunks", map[int]float64{2_500_000: math.NaN(), 1_200_000: math.Inf(1), 1_200_001: math.NaN()}, 1_200_000},
	}
	for _, c := range cases {
		xs := make([]float64, n)
		xs[7], xs[8], xs[9] = math.MaxFloat64, math.Copysign(0, -1), math.MaxFloat64
		for i, v := range c.bad {
			xs[i] = v
		}
		if got := FirstNonFinite(xs); got != c.want {
			t.Errorf("%s: FirstNonFinite = %d, want %d", c.name, got, c.want)
		}
		narrow := make([]float32, n)
		for i, v := range xs {
			narrow[i] = float32(v) // MaxFloat64 becomes +Inf: the largest float32 instead
		}
		narrow[7], narrow[9] = math.MaxFloat32, math.MaxFloat32
		if got := FirstNonFinite(narrow); got != c.want {
			t.Errorf("%s: FirstNonFinite (float32) = %d, want %d", c.name, got, c.want)
		}
	}
}
