//go:build !openblas

package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
	"gorgonia.org/gorgonia"
)

// GorgoniaBLAS is the BLAS behind Gorgonia's own ops (the gorgonia
// attention path's Mul and BatchedMatMul) in the default build: gonum's,
// with its matrix products routed to this package's Gemm, so both paths
// multiply with the same kernels. (gonum's own Sgemm is serial pure Go; the
// openblas build routes Gorgonia to OpenBLAS instead.)
type GorgoniaBLAS struct{ gonum.Implementation }

func init() { gorgonia.Use(GorgoniaBLAS{}) }

// Sgemm is C = alpha op(A) op(B) + beta C; Gemm takes alpha = 1, which is
// all Gorgonia asks, and any other alpha goes to gonum.
func (GorgoniaBLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if alpha != 1 || tA == blas.ConjTrans || tB == blas.ConjTrans {
		gonum.Implementation{}.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	Gemm(tA == blas.Trans, tB == blas.Trans, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

// Dgemm is Sgemm for float64.
func (GorgoniaBLAS) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if alpha != 1 || tA == blas.ConjTrans || tB == blas.ConjTrans {
		gonum.Implementation{}.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	Gemm(tA == blas.Trans, tB == blas.Trans, m, n, k, a, lda, b, ldb, beta, c, ldc)
}
