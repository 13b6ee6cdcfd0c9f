package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// TestFillDropoutMask: entries are exactly 0 or 1/(1-p); the zero fraction of
// 100000 entries is within 0.005 of p (over 5 standard deviations, and the
// draw is seeded so the test is deterministic); the same seed gives the same
// mask bitwise; p outside [0, 1) is rejected.
func TestFillDropoutMask(t *testing.T) {
	const n, p = 100000, 0.1
	fill := func(seed uint64) []float64 {
		m := tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(n))
		if err := FillDropoutMask(m, p, rand.New(rand.NewPCG(seed, 0))); err != nil {
			t.Fatal(err)
		}
		return m.Float64s()
	}
	a, b := fill(1), fill(1)
	zeros := 0
	for i, v := range a {
		if v != 0 && v != 1/(1-p) {
			t.Fatalf("entry %d = %v, want 0 or %v", i, v, 1/(1-p))
		}
		if v == 0 {
			zeros++
		}
		if math.Float64bits(v) != math.Float64bits(b[i]) {
			t.Fatalf("same seed, entry %d differs", i)
		}
	}
	if frac := float64(zeros) / n; math.Abs(frac-p) > 0.005 {
		t.Errorf("zero fraction %v, want %v within 0.005", frac, p)
	}
	m32 := tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(4))
	if err := FillDropoutMask(m32, 0, rand.New(rand.NewPCG(1, 0))); err != nil {
		t.Fatal(err)
	}
	for _, v := range m32.Float32s() {
		if v != 1 {
			t.Errorf("p = 0 gives %v, want all ones", m32.Float32s())
			break
		}
	}
	for _, bad := range []float64{-0.1, 1, math.NaN()} {
		if err := FillDropoutMask(m32, bad, rand.New(rand.NewPCG(1, 0))); err == nil {
			t.Errorf("p = %v accepted", bad)
		}
	}
}
