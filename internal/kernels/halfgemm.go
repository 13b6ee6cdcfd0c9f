package kernels

// Products with 16-bit weights. The promise: GemmHalf over B's BF16 or F16
// values gives C bit for bit as Gemm over the same values widened to
// float32 (Widen), on the same path, whatever the shapes, strides and
// flags. It holds because widening is exact and each kernel does the
// float32 kernel's operations in its order on the widened values: only the
// loads differ. AVX-512 BF16's VDPBF16PS is not used: it multiplies BF16
// by BF16 (A would have to be rounded to BF16) and sums pairs in its own
// order, so its results are not the float32 kernel's.

// halfWidenMax is the most values of B gemmHalfWidened widens at a time
// (16 MiB of float32).
const halfWidenMax = 1 << 22

// GemmHalf is C = op(A) op(B) + beta C as Gemm has it, for float32 A and C
// and B's values in 16-bit format h, read in place: row-major, ldb in
// elements. C gets the bits Gemm gives over B widened to float32: the
// products go to the kernel Gemm would choose, which widens B's values as
// it loads them (the GEMV) or packs them (sgemm, sgemmGo).
func GemmHalf(h Half, transA, transB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	h.mustBeFormat()
	if m <= gemvRows && !transA {
		if transB {
			gemvT(m, n, k, a, lda, weights{u16: b, half: h}, ldb, beta, c, ldc)
		} else {
			gemvHalfN(h, m, n, k, a, lda, b, ldb, beta, c, ldc)
		}
		return
	}
	w := weights{u16: b, half: h}
	switch {
	case useSgemm():
		sgemm(transA, transB, m, n, k, a, lda, w, ldb, beta, c, ldc)
	case useSgemmGo():
		sgemmGo(transA, transB, m, n, k, a, lda, w, ldb, beta, c, ldc)
	default: // the BLAS: the openblas build, other architectures
		gemmHalfWidened(h, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
	}
}

// gemmHalfWidened is GemmHalf through Gemm (the BLAS builds'), B widened
// into scratch: all of it when it holds at most halfWidenMax values, which
// gives Gemm's bits over B widened, else a block of C's columns at a time,
// whose bits are the BLAS's for those blocks (outside the promise, as the
// BLAS builds are outside the same-bits guarantee).
func gemmHalfWidened(h Half, transA, transB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	ld := max(k, 1) // of a transposed B's widened rows
	block := min(n, max(1, halfWidenMax/ld))
	buf := Scratch(block * ld)
	defer PutScratch(buf)
	for j0 := 0; j0 < n; j0 += block {
		nb := min(block, n-j0)
		w := (*buf)[:nb*ld]
		if transB { // B (n, k): rows j0.. of B are columns j0.. of C
			for j := 0; j < nb; j++ {
				Widen(h, w[j*ld:j*ld+k], b[(j0+j)*ldb:(j0+j)*ldb+k])
			}
			Gemm(transA, true, m, nb, k, a, lda, w, ld, beta, c[j0:], ldc)
			continue
		}
		for p := 0; p < k; p++ { // B (k, n): columns j0.. of every row
			Widen(h, w[p*nb:(p+1)*nb], b[p*ldb+j0:p*ldb+j0+nb])
		}
		Gemm(transA, false, m, nb, k, a, lda, w, nb, beta, c[j0:], ldc)
	}
}

// GemmBF16 is GemmHalf(BF16, ...).
func GemmBF16(transA, transB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	GemmHalf(BF16, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

// GemmF16 is GemmHalf(F16, ...).
func GemmF16(transA, transB bool, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	GemmHalf(F16, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
}

// GemvHalf is y = W x for W (rows, cols) row-major in 16-bit format h and x
// (cols): a Linear's weight (out, in) or the LM head's (V, d) against one
// position, the decoder's product. It is GemmHalf(h, false, true, 1, rows,
// cols, x, cols, w, cols, 0, y, rows), so y gets the float32 GEMV's bits
// over W widened.
func GemvHalf(h Half, y []float32, w []uint16, x []float32, rows, cols int) {
	GemmHalf(h, false, true, 1, rows, cols, x, max(cols, 1), w, max(cols, 1), 0, y, max(rows, 1))
}

// GemvBF16 is GemvHalf(BF16, ...).
func GemvBF16(y []float32, w []uint16, x []float32, rows, cols int) {
	GemvHalf(BF16, y, w, x, rows, cols)
}

// GemvF16 is GemvHalf(F16, ...).
func GemvF16(y []float32, w []uint16, x []float32, rows, cols int) {
	GemvHalf(F16, y, w, x, rows, cols)
}
