package kernels

// The float32 GEMV: C = A Bᵀ + beta C for at most gemvRows rows of A and B
// (n, k) read in place, row by row: a Linear's weight (out, in) or the tied
// LM head's (V, D) embedding. Decoding one position per sequence is this
// product, and it reads every weight once per step, so it runs at the
// speed memory delivers B: B's rows are split over the cores, each block of
// them read from memory once for all of A's rows, and nothing is packed or
// copied.
//
// Every path gives the same bits: each dot product sums in gemvLanes
// float32 lanes (element p in lane p%16, a product rounded to float32 and
// then a sum, never fused), folded as gemvFold does, and the elements past
// the last whole group of 16 are added to the folded sum in order. The
// AVX-512 (one ZMM register per row) and AVX2 (two YMM registers)
// kernels of gemv_amd64.s do those operations in that order, and so does
// gemvDotsGo on the generic path. B may be 16-bit (GemmHalf): the kernels
// of halfgemv_amd64.s then widen each weight as they load it and do the
// same operations after.

// gemvLanes is how many lanes a GEMV dot product sums in.
const gemvLanes = 16

// gemvBlock is how many rows of B a worker takes at a time: read from
// memory for A's first row, from the core's cache for the others
// (16 rows of k = 3072 are 192 KiB).
const gemvBlock = 16

// gemvParallelMin is the size n*k of B from which its rows are split over
// the cores: a GEMV is bound by memory, not by arithmetic, and one core
// reads 256 KiB in about 20 µs, several times what waking another costs.
const gemvParallelMin = 1 << 16

// gemvT is Gemm's float32 product for m <= gemvRows rows of A
// (not transposed) and B transposed, (n, k) as stored: float32 or 16-bit
// weights (GemmHalf), the same operations on the values either way.
func gemvT(m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	blocks := ceilDiv(n, gemvBlock)
	workers := 1
	if n*k >= gemvParallelMin {
		workers = Workers()
	}
	if workers == 1 {
		gemvBlocks(0, blocks, m, n, k, a, lda, b, ldb, beta, c, ldc)
		return
	}
	guidedChunks(blocks, workers, func(lo, hi int) {
		gemvBlocks(lo, hi, m, n, k, a, lda, b, ldb, beta, c, ldc)
	})
}

// gemvBlocks computes the columns of C of B's row blocks [lo, hi), each
// block for every row of A before the next.
func gemvBlocks(lo, hi, m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	var dots [gemvBlock]float32
	k16 := k &^ (gemvLanes - 1)
	for blk := lo; blk < hi; blk++ {
		j0, j1 := blk*gemvBlock, min(n, (blk+1)*gemvBlock)
		for i := 0; i < m; i++ {
			ai, ci, out := a[i*lda:i*lda+k], c[i*ldc+j0:i*ldc+j1], dots[:j1-j0]
			gemvDots(k16, ai, b, j0*ldb, ldb, out)
			for j := range out {
				v := out[j]
				row := (j0 + j) * ldb
				for p := k16; p < k; p++ {
					v += float32(ai[p] * b.at(row+p))
				}
				if beta != 0 { // beta 0 never reads C, which may hold anything
					v += float32(beta * ci[j])
				}
				ci[j] = v
			}
		}
	}
}

// gemvDots sets out[r] to the folded lane sums of x·w_r over the first
// k16 elements (a multiple of gemvLanes) for every r < len(out), w_r being
// w's values from element off+r*ldw on.
func gemvDots(k16 int, x []float32, b weights, off, ldw int, out []float32) {
	rows := len(out)
	if rows == 0 {
		return
	}
	if k16 == 0 {
		clear(out)
		return
	}
	_ = x[k16-1]
	if b.half != 0 {
		gemvDotsHalf(k16, x, b.half, b.u16[off:], ldw, out)
		return
	}
	w := b.f32[off:]
	_ = w[(rows-1)*ldw+k16-1] // the kernels read no further
	switch {
	case useAVX512:
		gemvDotsAVX512(k16, &x[0], &w[0], ldw, rows, &out[0])
	case useAVX2:
		gemvDotsAVX2(k16, &x[0], &w[0], ldw, rows, &out[0])
	default:
		gemvDotsGo(k16, x, w, ldw, out)
	}
}

// gemvDotsGo is gemvDots in Go, the generic path's and the reference of
// the kernels' order.
func gemvDotsGo(k16 int, x, w []float32, ldw int, out []float32) {
	for r := range out {
		out[r] = gemvLanesDot(x[:k16], w[r*ldw:r*ldw+k16])
	}
}

// gemvLanesDot is one row's folded lane sums of x·w, len(x) a multiple of
// gemvLanes.
func gemvLanesDot(x, w []float32) float32 {
	w = w[:len(x)]
	var lanes [gemvLanes]float32
	for p := 0; p < len(x); p += gemvLanes {
		for l := range lanes {
			lanes[l] += float32(x[p+l] * w[p+l]) // the conversion rounds the product: no FMA
		}
	}
	return gemvFold(lanes)
}

// gemvFold sums the lanes pairwise: lane l + lane l+8, then l + l+4,
// l + l+2 and l + l+1, as the kernels fold their registers.
func gemvFold(lanes [gemvLanes]float32) float32 {
	for width := gemvLanes / 2; width >= 1; width /= 2 {
		for l := 0; l < width; l++ {
			lanes[l] += lanes[l+width]
		}
	}
	return lanes[0]
}

// Sum is the sum of x in the GEMV's order: lane p%16 sums the whole groups
// of 16, the lanes fold as gemvFold, the rest is added in order; every path
// gives the same bits. It reads x once at the speed memory delivers it
// (cmd/bench measures the machine's read bandwidth with it).
func Sum(x []float32) float32 {
	k16 := len(x) &^ (gemvLanes - 1)
	var s float32
	switch {
	case k16 == 0:
	case useAVX512:
		s = sumLanesAVX512(k16, &x[0])
	case useAVX2:
		s = sumLanesAVX2(k16, &x[0])
	default:
		var lanes [gemvLanes]float32
		for p := 0; p < k16; p += gemvLanes {
			for l := range lanes {
				lanes[l] += x[p+l]
			}
		}
		s = gemvFold(lanes)
	}
	for _, v := range x[k16:] {
		s += v
	}
	return s
}
