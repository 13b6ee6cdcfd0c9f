package kernels

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// float is the element type of the generic kernels.
type float interface{ float32 | float64 }

// blasImpl is the BLAS behind float64 GEMMs and the generic path's float32
// ones: gonum's pure Go, or OpenBLAS with the openblas build tag.
var blasImpl interface {
	blas.Float32Level3
	blas.Float64Level3
} = gonum.Implementation{}

// sgemmPreferBLAS is set by the openblas build, where every GEMM goes to
// the BLAS instead of sgemm.
var sgemmPreferBLAS bool

// blasSplitRows is set by the openblas build, which runs OpenBLAS on one
// thread: large float32 GEMMs are then split by rows over the cores here, so
// Go schedules every thread (OpenBLAS's own idle workers spin, and took CPU
// from the Go code between GEMMs).
var blasSplitRows bool

// useSgemm reports whether float32 GEMMs go to sgemm, the assembly
// kernels, and useSgemmGo whether to sgemmGo, their sums in Go (else to
// the BLAS).
func useSgemm() bool   { return useAVX2 && !sgemmPreferBLAS }
func useSgemmGo() bool { return !useAVX2 && !sgemmPreferBLAS && sgemmGoOnGeneric }

// Gemm is C = op(A) op(B) + beta C for row-major A, B, C, where op
// transposes when its flag is set: op(A) is m x k, op(B) k x n; leading
// dimensions are at least max(1, columns), as BLAS requires. float32 goes
// to this package's sgemm (the assembly kernels) on the AVX2 and AVX-512
// paths and to sgemmGo (their sums in Go) on amd64's generic one, unless
// the build chose a BLAS (the openblas tag); everything else goes to the
// BLAS (gonum by default, OpenBLAS with the openblas tag).
func Gemm[T float](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m <= gemvRows && !transA {
		if a32, ok := any(a).([]float32); ok && transB {
			gemvT(m, n, k, a32, lda, weights{f32: any(b).([]float32)}, ldb, float32(beta), any(c).([]float32), ldc)
			return
		}
		gemv(transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	if a32, ok := any(a).([]float32); ok && (useSgemm() || useSgemmGo()) {
		gemm := sgemmGo
		if useSgemm() {
			gemm = sgemm
		}
		gemm(transA, transB, m, n, k, a32, lda, weights{f32: any(b).([]float32)}, ldb, float32(beta), any(c).([]float32), ldc)
		return
	}
	ta, tb := trans(transA), trans(transB)
	switch a := any(a).(type) {
	case []float64:
		blasImpl.Dgemm(ta, tb, m, n, k, 1, a, lda, any(b).([]float64), ldb, float64(beta), any(c).([]float64), ldc)
	case []float32:
		blasSgemm(ta, tb, m, n, k, a, lda, any(b).([]float32), ldb, float32(beta), any(c).([]float32), ldc)
	}
}

func trans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// blasSgemm is C = op(A) op(B) + beta C through the BLAS,
// split by rows over the cores when blasSplitRows and the product is large.
func blasSgemm(ta, tb blas.Transpose, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if !blasSplitRows || m < 2*sgemmMR || float64(m)*float64(n)*float64(k) < sgemmParallelMin {
		blasImpl.Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
		return
	}
	blasSgemmRows(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

// blasSgemmRows is blasSgemm's multi-core path, a function of its own so
// that the closure's captured variables are heap-allocated only here, not
// on every per-head product.
func blasSgemmRows(ta, tb blas.Transpose, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	workers := Workers()
	blocks := min(ceilDiv(m, sgemmMR), workers*chunksPerWorker)
	chunks(blocks, workers, func(lo, hi int) {
		i0, i1 := lo*m/blocks, hi*m/blocks
		ai := i0 * lda // first element of row i0 of op(A)
		if ta == blas.Trans {
			ai = i0
		}
		blasImpl.Sgemm(ta, tb, i1-i0, n, k, 1, a[ai:], lda, b, ldb, beta, c[i0*ldc:], ldc)
	})
}

// gemvRows is the most rows of A that Gemm multiplies row by row (a
// decoding step's one position per sequence): packing B for a blocked GEMM
// costs more than the product then.
const gemvRows = 4

// gemv is Gemm for m <= gemvRows rows of A (not transposed) but float32
// with transB (gemvT), one row of C at a time: with transB, dot products of
// A's row with B's rows (B read as stored, (n, k)); otherwise A's row
// times B (k, n) as k scaled additions.
func gemv[T float](transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		ai, ci := a[i*lda:i*lda+k], c[i*ldc:i*ldc+n]
		if transB {
			for j := range ci {
				v := dot(ai, b[j*ldb:j*ldb+k])
				if beta != 0 { // beta 0 never reads C, which may hold anything
					v += beta * ci[j]
				}
				ci[j] = v
			}
			continue
		}
		if beta == 0 {
			clear(ci)
		} else {
			for j := range ci {
				ci[j] *= beta
			}
		}
		for p, x := range ai {
			row := b[p*ldb : p*ldb+n]
			for j, y := range row {
				ci[j] += x * y
			}
		}
	}
}

// dot is the dot product of two equal-length slices through gonum's
// vector kernel (assembly on amd64).
func dot[T float](x, y []T) T {
	switch x := any(x).(type) {
	case []float32:
		return T(gonum.Implementation{}.Sdot(len(x), x, 1, any(y).([]float32), 1))
	case []float64:
		return T(gonum.Implementation{}.Ddot(len(x), x, 1, any(y).([]float64), 1))
	}
	return 0
}

// Axpy is y += alpha x, through gonum's vector kernels.
func Axpy[T float](alpha T, x, y []T) {
	switch x := any(x).(type) {
	case []float32:
		gonum.Implementation{}.Saxpy(len(x), float32(alpha), x, 1, any(y).([]float32), 1)
	case []float64:
		gonum.Implementation{}.Daxpy(len(x), float64(alpha), x, 1, any(y).([]float64), 1)
	}
}

// Dot is x·y for slices of one length, through gonum's vector kernels.
func Dot[T float](x, y []T) T { return dot(x, y) }

// ScaleAdd sets x[i] = s*x[i] + b.
func ScaleAdd[T float](x []T, s, b T) {
	for i := range x {
		x[i] = s*x[i] + b
	}
}
