package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddScaledRows: on every path, AddScaledRows gives the bits of the
// plain loop (row after row, each product rounded before it is added) and
// the float64 sum within 1e-6 of the sum of magnitudes, for widths around
// the kernel's 16 and 64 lanes, with rows wider than the width read
// (lda > n), and it writes no element of y past its length.
func TestAddScaledRows(t *testing.T) { forEachPath(t, testAddScaledRows) }

func testAddScaledRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	normal := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, n := range []int{1, 7, 15, 16, 17, 31, 63, 64, 65, 80, 130} {
		for _, rows := range []int{1, 2, 64} {
			lda := n + 3
			x, a, y := normal(rows), normal(rows*lda), normal(n+1)
			want := append([]float32(nil), y...)
			ref, scale := make([]float64, n), make([]float64, n)
			for j := range ref {
				ref[j], scale[j] = float64(y[j]), math.Abs(float64(y[j]))
			}
			for p := range x {
				for j := 0; j < n; j++ {
					want[j] += float32(x[p] * a[p*lda+j])
					ref[j] += float64(x[p]) * float64(a[p*lda+j])
					scale[j] += math.Abs(float64(x[p]) * float64(a[p*lda+j]))
				}
			}
			AddScaledRows(y[:n], x, a, lda)
			for j := range y {
				if math.Float32bits(y[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%s n=%d rows=%d: y[%d] = %v, want %v bit for bit", Active(), n, rows, j, y[j], want[j])
				}
				if j < n && math.Abs(float64(y[j])-ref[j]) > 1e-6*scale[j] {
					t.Fatalf("%s n=%d rows=%d: y[%d] = %v, float64 %v", Active(), n, rows, j, y[j], ref[j])
				}
			}
		}
	}
}

// TestPrefetchRows: asking for lines changes nothing, and asking past the
// slice panics before any line is asked for.
func TestPrefetchRows(t *testing.T) {
	x := make([]float32, 10*64)
	for i := range x {
		x[i] = float32(i)
	}
	PrefetchRows(x, 10, 64, 3, 64)
	PrefetchRows(x, 0, 64, 0, 64) // no rows: nothing asked
	PrefetchRows(x, 10, 64, 5, 5) // empty rows: nothing asked
	for i, v := range x {
		if v != float32(i) {
			t.Fatalf("x[%d] = %v after PrefetchRows, want %d", i, v, i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("PrefetchRows past the end of x did not panic")
		}
	}()
	PrefetchRows(x, 10, 64, 0, 65)
}
