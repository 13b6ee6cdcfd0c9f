package kernels

// weights is the B operand of a GEMV or GEMM: float32 values, or 16-bit
// values of format half read in place and widened as they are read.
type weights struct {
	f32  []float32
	u16  []uint16
	half Half // BF16 or F16; 0 when the values are f32's
}

// at is element i as float32.
func (w weights) at(i int) float32 {
	if w.half == 0 {
		return w.f32[i]
	}
	return w.half.ToFloat32(w.u16[i])
}

// run returns elements [i, i+n) as float32: w's own when float32, else
// widened into buf (at least n long).
func (w weights) run(i, n int, buf []float32) []float32 {
	if w.half == 0 {
		return w.f32[i : i+n]
	}
	buf = buf[:n]
	Widen(w.half, buf, w.u16[i:i+n])
	return buf
}

// gemvDotsHalf is gemvDots over 16-bit rows: the assembly widens each
// 16 weights as it loads them, the generic path widens a row at a time
// and sums it as gemvDotsGo does.
func gemvDotsHalf(k16 int, x []float32, h Half, w []uint16, ldw int, out []float32) {
	rows := len(out)
	_ = w[(rows-1)*ldw+k16-1] // the kernels read no further
	switch {
	case useAVX512 && h == BF16:
		gemvDotsBF16AVX512(k16, &x[0], &w[0], ldw, rows, &out[0])
	case useAVX512:
		gemvDotsF16AVX512(k16, &x[0], &w[0], ldw, rows, &out[0])
	case useAVX2 && h == BF16:
		gemvDotsBF16AVX2(k16, &x[0], &w[0], ldw, rows, &out[0])
	case useAVX2:
		gemvDotsF16AVX2(k16, &x[0], &w[0], ldw, rows, &out[0])
	default:
		row := Scratch(k16)
		for r := range out {
			Widen(h, *row, w[r*ldw:r*ldw+k16])
			out[r] = gemvLanesDot(x[:k16], (*row)[:k16])
		}
		PutScratch(row)
	}
}

// gemvHalfN is Gemm's gemv for m <= gemvRows rows of A against an
// untransposed 16-bit B (k, n), Conv1D's (in, out) layout: C's row is
// scaled (or cleared), then A's row times B added as k scaled rows, each
// row of B widened first, the float32 gemv's operations.
func gemvHalfN(h Half, m, n, k int, a []float32, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int) {
	row := Scratch(n)
	defer PutScratch(row)
	for i := 0; i < m; i++ {
		ai, ci := a[i*lda:i*lda+k], c[i*ldc:i*ldc+n]
		if beta == 0 {
			clear(ci)
		} else {
			for j := range ci {
				ci[j] *= beta
			}
		}
		for p, x := range ai {
			w := (*row)[:n]
			Widen(h, w, b[p*ldb:p*ldb+n])
			for j, y := range w {
				ci[j] += x * y
			}
		}
	}
}
