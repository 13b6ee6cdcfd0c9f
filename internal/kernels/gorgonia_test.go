//go:build !openblas

package kernels

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/gorgonia"
)

// TestGorgoniaUsesGemm: Gorgonia's BLAS is GorgoniaBLAS, whose Sgemm
// equals a float64 loop for each transpose (1e-5 relative to the sum of
// magnitudes) and leaves C's old contents out when beta is 0, even NaN.
func TestGorgoniaUsesGemm(t *testing.T) {
	if _, ok := gorgonia.WhichBLAS().(GorgoniaBLAS); !ok {
		t.Fatalf("Gorgonia uses %T", gorgonia.WhichBLAS())
	}
	for _, m := range []int{3, 40} { // row by row (gemv), and the blocked GEMM
		sgemmAgainstLoop(t, m)
	}
}

func sgemmAgainstLoop(t *testing.T, m int) {
	const n, k = 5, 7
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%5) - 2
	}
	for i := range b {
		b[i] = float32(i%3) - 0.5
	}
	for _, tb := range []bool{false, true} {
		// B as stored: (k, n), or (n, k) read transposed.
		bs, ldb := b, n
		if tb {
			bs, ldb = make([]float32, n*k), k
			for p := 0; p < k; p++ {
				for j := 0; j < n; j++ {
					bs[j*k+p] = b[p*n+j]
				}
			}
		}
		c := make([]float32, m*n)
		for i := range c {
			c[i] = float32(math.NaN())
		}
		tr := blas.NoTrans
		if tb {
			tr = blas.Trans
		}
		GorgoniaBLAS{}.Sgemm(blas.NoTrans, tr, m, n, k, 1, a, k, bs, ldb, 0, c, n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want, scale float64
				for p := 0; p < k; p++ {
					want += float64(a[i*k+p]) * float64(b[p*n+j])
					scale += math.Abs(float64(a[i*k+p]) * float64(b[p*n+j]))
				}
				if got := float64(c[i*n+j]); math.IsNaN(got) || math.Abs(got-want) > 1e-5*(1+scale) {
					t.Errorf("m %d transB %v: C[%d][%d] = %v, want %v", m, tb, i, j, got, want)
				}
			}
		}
	}
}
