package kernels

// A float32 GEMM in Go around assembly micro-kernels (sgemm_amd64.s),
// organised as in BLIS / GotoBLAS: C is computed in tiles of 6 (or 12) rows
// by 16 (or 32) columns held in registers, over blocks of depth kc. The
// kernels take A's strides, so A is read in place in either layout; B is
// read in place when untransposed and packed into 16-column panels when
// transposed; 16-bit weights (GemmHalf) are always packed, widened as they
// are copied, so the kernels see the float32 values. AVX2 + FMA kernel: 6x16
// in 12 YMM registers; AVX-512 kernels: 6x32, 12x32, 12x16 and a masked 6x16
// for narrow edges. It is what the pure-Go default build multiplies float32
// with; gonum's Sgemm (SSE axpy/dot loops) reaches a small fraction of the
// machine's peak.

const (
	sgemmMR = 6    // rows of a kernel tile (the AVX-512 12-row kernels take two panels)
	sgemmNR = 16   // columns of a kernel tile (two YMM or one ZMM register)
	sgemmKC = 256  // depth of one block: a 12x256 A panel and a 256x32 B panel fit in L1
	sgemmNC = 2048 // columns of B packed at once (a multiple of NR)
	// sgemmParallelMin is the size m*n*k from which the row blocks are
	// spread over the cores (see ParallelMinWork for why not lower).
	sgemmParallelMin = 1 << 22
)

// sgemm computes C = op(A) op(B) + beta C for row-major A, B, C, where op
// transposes when its flag is set: op(A) is m x k, op(B) k x n.
func sgemm(transA, transB bool, m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	beta, more := sgemmPrepareC(m, n, k, beta, c, ldc)
	if !more {
		return
	}
	// The size test comes first: Workers takes the scheduler lock, which
	// per attention-head GEMM showed up in profiles.
	if m >= 2*sgemmMR && float64(m)*float64(n)*float64(k) >= sgemmParallelMin {
		if workers := Workers(); workers > 1 {
			if transB && n >= m {
				sgemmColumnsParallel(workers, transA, m, n, k, a, lda, b, ldb, beta, c, ldc)
			} else {
				sgemmParallel(workers, transA, transB, m, n, k, a, lda, b, ldb, beta, c, ldc)
			}
			return
		}
	}
	sgemmColumns(transA, transB, m, 0, n, k, a, lda, b, ldb, beta, c, ldc)
}

// sgemmColumns computes columns [j0, j1) of C, every row, on the calling
// goroutine: B packed a block at a time into a scratch buffer of its own.
func sgemmColumns(transA, transB bool, m, j0, j1, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	pb := Scratch(min(k, sgemmKC) * roundUp(min(j1-j0, sgemmNC), sgemmNR))
	for jc := j0; jc < j1; jc += sgemmNC {
		nc := min(sgemmNC, j1-jc)
		for pc := 0; pc < k; pc += sgemmKC {
			kc := min(sgemmKC, k-pc)
			packB(transB, b, ldb, pc, jc, kc, nc, *pb)
			macroKernel(transA, transB, a, lda, b, ldb, 0, jc, pc, m, nc, kc, *pb, c[jc:], ldc, beta == 1 || pc > 0)
		}
	}
	PutScratch(pb)
}

// sgemmColumnsParallel is sgemm for a transposed B at least as wide as C is
// tall (a Linear's weight, or the LM head's, against a forward's few
// hundred rows) with the columns of C split into blocks, a few per worker,
// each worker packing its own block of B. Packing a transposed B copies all
// of it: split by rows, one goroutine packed each block while the others
// waited, a third of a forward over 256 tokens of GPT-2 small's shape.
// Every element of C is the sum the row split computes, in the same order.
func sgemmColumnsParallel(workers int, transA bool, m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	width := roundUp(ceilDiv(n, workers*chunksPerWorker), 2*sgemmNR) // whole 32-column tiles
	chunks(ceilDiv(n, width), workers, func(lo, hi int) {
		sgemmColumns(transA, true, m, lo*width, min(hi*width, n), k, a, lda, b, ldb, beta, c, ldc)
	})
}

// sgemmParallel is sgemm with the rows of C split into blocks of a multiple
// of 6 rows, a few per worker (see chunks); B is packed once per block of
// depth and shared. It is a separate function because the closure handed to the
// workers makes the variables it captures heap-allocated, which the serial
// path, called per attention head, should not pay for.
func sgemmParallel(workers int, transA, transB bool, m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	mc := roundUp(ceilDiv(m, workers*chunksPerWorker), sgemmMR)
	blocks := ceilDiv(m, mc)
	pb := Scratch(min(k, sgemmKC) * roundUp(min(n, sgemmNC), sgemmNR))
	if !transB && b.half == 0 && useAVX512 {
		// B is read in place (packB packs nothing), so no block of depth
		// waits for a shared packing: one fork and join for the whole
		// product. A GEMM of few rows and great depth (a weight gradient,
		// k = B*T) joined once per block of depth, 16 times at k = 4096,
		// and ran on two cores at 1.2 times one core's speed.
		chunks(blocks, workers, func(lo, hi int) {
			i0, i1 := lo*mc, min(hi*mc, m)
			for jc := 0; jc < n; jc += sgemmNC {
				nc := min(sgemmNC, n-jc)
				for pc := 0; pc < k; pc += sgemmKC {
					kc := min(sgemmKC, k-pc)
					macroKernel(transA, transB, a, lda, b, ldb, i0, jc, pc, i1-i0, nc, kc, *pb, c[i0*ldc+jc:], ldc, beta == 1 || pc > 0)
				}
			}
		})
		PutScratch(pb)
		return
	}
	for jc := 0; jc < n; jc += sgemmNC {
		nc := min(sgemmNC, n-jc)
		for pc := 0; pc < k; pc += sgemmKC {
			kc := min(sgemmKC, k-pc)
			packB(transB, b, ldb, pc, jc, kc, nc, *pb)
			add := beta == 1 || pc > 0
			chunks(blocks, workers, func(lo, hi int) {
				i0, i1 := lo*mc, min(hi*mc, m)
				macroKernel(transA, transB, a, lda, b, ldb, i0, jc, pc, i1-i0, nc, kc, *pb, c[i0*ldc+jc:], ldc, add)
			})
		}
	}
	PutScratch(pb)
}

// macroKernel multiplies rows x kc of op(A), starting at row i0 and depth
// p0, by the kc x cols block of op(B) at (p0, j0) into C (adding when add),
// one 6x16 tile at a time. Full 6-row panels of A are read in place (the
// kernel takes A's strides, so neither layout needs packing), and so are
// full 16-column panels of an untransposed float32 B; the rest of B was
// packed into pb by packB; with AVX-512, narrower panels of an untransposed
// float32 B are read in place too, tiles narrower than 16 columns are
// written straight to C through lane masks, and tiles of two panels at once
// go to the 12-row kernels. A last partial panel of A is read in place when
// the slice a holds six full rows from it on, else packed with zero rows;
// either way its tiles go through a local tile, so no kernel reads outside
// the slices given or writes outside C's block.
func macroKernel(transA, transB bool, a []float32, lda int, b weights, ldb, i0, j0, p0, rows, cols, kc int, pb, c []float32, ldc int, add bool) {
	flag := 0
	if add {
		flag = 1
	}
	rs, ps := lda, 1 // op(A)[i][p] = a[i*rs + p*ps]
	if transA {
		rs, ps = 1, lda
	}
	var tile [sgemmMR * sgemmNR]float32
	inPlace := !transB && b.half == 0 // B's panels read where they are
	for ir := 0; ir < rows; {
		mr := min(sgemmMR, rows-ir)
		// With AVX-512, two full panels are taken together where that helps:
		// 16-column tiles then use the 12-row kernel.
		pair := useAVX512 && rows-ir >= 2*sgemmMR
		var edge *[]float32
		ap, ap2, ars, aps := (*float32)(nil), (*float32)(nil), rs, ps
		// A last partial panel is read in place too when a's slice goes on
		// past it (a per-head product inside a larger heads tensor): the
		// kernel's rows beyond it land in the local tile and are dropped.
		if last := (i0+ir+sgemmMR-1)*rs + (p0+kc-1)*ps; mr == sgemmMR || last < len(a) {
			ap = &a[(i0+ir)*rs+p0*ps]
			if pair {
				ap2 = &a[(i0+ir+sgemmMR)*rs+p0*ps]
			}
		} else {
			edge = Scratch(sgemmMR * kc)
			packA(transA, a, lda, i0+ir, p0, mr, kc, *edge)
			ap, ars, aps = &(*edge)[0], 1, sgemmMR
		}
		c2 := (sgemmMR + ir) * ldc // offset of the second panel's rows in C
		for jr := 0; jr < cols; jr += sgemmNR {
			nr := min(sgemmNR, cols-jr)
			bp, bs := &pb[jr*kc], sgemmNR
			if inPlace && (nr == sgemmNR || useAVX512) {
				bp, bs = &b.f32[p0*ldb+j0+jr], ldb
			}
			switch {
			case useAVX512 && mr == sgemmMR && cols-jr >= 2*sgemmNR:
				bp2 := &pb[(jr+sgemmNR)*kc]
				if inPlace {
					bp2 = &b.f32[p0*ldb+j0+jr+sgemmNR]
				}
				if pair {
					sgemmKernel12x32(kc, ap, ars, aps, bp, bp2, bs, &c[ir*ldc+jr], ldc, flag)
				} else {
					sgemmKernel6x32(kc, ap, ars, aps, bp, bp2, bs, &c[ir*ldc+jr], ldc, flag)
				}
				jr += sgemmNR
			case pair && nr == sgemmNR:
				sgemmKernel12x16(kc, ap, ars, aps, bp, bs, &c[ir*ldc+jr], ldc, flag)
			case mr == sgemmMR && nr == sgemmNR:
				sgemmKernel6x16(kc, ap, ars, aps, bp, bs, &c[ir*ldc+jr], ldc, flag)
			case useAVX512 && mr == sgemmMR:
				sgemmKernel6x16Masked(kc, ap, ars, aps, bp, bs, &c[ir*ldc+jr], ldc, flag, 1<<nr-1)
				if pair {
					sgemmKernel6x16Masked(kc, ap2, ars, aps, bp, bs, &c[c2+jr], ldc, flag, 1<<nr-1)
				}
			default:
				if useAVX512 {
					sgemmKernel6x16Masked(kc, ap, ars, aps, bp, bs, &tile[0], sgemmNR, 0, 1<<nr-1)
				} else {
					sgemmKernel6x16(kc, ap, ars, aps, bp, bs, &tile[0], sgemmNR, 0)
				}
				for r := 0; r < mr; r++ {
					dst := c[(ir+r)*ldc+jr : (ir+r)*ldc+jr+nr]
					src := tile[r*sgemmNR : r*sgemmNR+nr]
					if add {
						for j, v := range src {
							dst[j] += v
						}
					} else {
						copy(dst, src)
					}
				}
			}
		}
		ir += sgemmMR
		if pair {
			ir += sgemmMR
		}
		if edge != nil {
			PutScratch(edge)
		}
	}
}

// packA copies rows (< 6) x kc of op(A) at (i0, k0) into one 6-row panel
// stored k-major (kc steps of 6 values), the missing rows zero.
func packA(trans bool, a []float32, lda, i0, k0, rows, kc int, panel []float32) {
	clear(panel)
	for r := 0; r < rows; r++ {
		for p := 0; p < kc; p++ {
			if trans {
				panel[p*sgemmMR+r] = a[(k0+p)*lda+i0+r]
			} else {
				panel[p*sgemmMR+r] = a[(i0+r)*lda+k0+p]
			}
		}
	}
}

// packB copies the kc x cols block of op(B) at (k0, j0) into 16-column
// panels, each stored k-major (kc steps of 16 values), columns past the end
// zero; 16-bit values are widened on the way. Panels of an untransposed
// float32 B that macroKernel reads in place (full ones, and with AVX-512
// every one) are skipped.
func packB(trans bool, b weights, ldb, k0, j0, kc, cols int, pb []float32) {
	if !trans && b.half != 0 {
		packRowsWidened(b, ldb, k0, j0, kc, cols, pb)
		return
	}
	var widened [sgemmNR * sgemmKC]float32 // a transposed 16-bit B's rows (a pool buffer this small churned with pb)
	rows := widened[:sgemmNR*kc]
	for jr := 0; jr < cols; jr += sgemmNR {
		panel := pb[jr*kc : (jr+sgemmNR)*kc]
		nr := min(sgemmNR, cols-jr)
		if !trans { // op(B)[p][j] = b[p*ldb+j]: each step is a contiguous run
			if nr == sgemmNR || useAVX512 { // read in place (masked when narrower)
				continue
			}
			for p := 0; p < kc; p++ {
				dst := panel[p*sgemmNR : (p+1)*sgemmNR]
				copy(dst[:nr], b.f32[(k0+p)*ldb+j0+jr:])
				clear(dst[nr:])
			}
			continue
		}
		if nr == sgemmNR && b.half == 0 {
			packTransposed16(b.f32[(j0+jr)*ldb+k0:], ldb, kc, panel)
			continue
		}
		if nr == sgemmNR {
			for j := range sgemmNR {
				b.run((j0+jr+j)*ldb+k0, kc, rows[j*kc:])
			}
			packTransposed16(rows, kc, kc, panel)
			continue
		}
		for j := 0; j < nr; j++ {
			for p, v := range b.run((j0+jr+j)*ldb+k0, kc, rows) {
				panel[p*sgemmNR+j] = v
			}
		}
		for j := nr; j < sgemmNR; j++ {
			for p := 0; p < kc; p++ {
				panel[p*sgemmNR+j] = 0
			}
		}
	}
}

// packRowsWidened is packB for an untransposed 16-bit B: each step's run
// of cols values widened at once, then dealt out to the panels.
func packRowsWidened(b weights, ldb, k0, j0, kc, cols int, pb []float32) {
	var buf [sgemmNC]float32 // on the stack: no pool churn
	for p := 0; p < kc; p++ {
		run := b.run((k0+p)*ldb+j0, cols, buf[:])
		for jr := 0; jr < cols; jr += sgemmNR {
			nr := min(sgemmNR, cols-jr)
			dst := pb[jr*kc+p*sgemmNR : jr*kc+(p+1)*sgemmNR]
			copy(dst, run[jr:jr+nr])
			clear(dst[nr:])
		}
	}
}

// packTransposed16 packs 16 rows of a transposed B (kc values each from b,
// rows ldb apart) into a panel of kc steps of 16: step p holds value p of
// each row. The assembly transposes 8x8 blocks; the steps past the last
// whole group of 8 go one at a time.
func packTransposed16(b []float32, ldb, kc int, panel []float32) {
	_ = b[(sgemmNR-1)*ldb+kc-1] // the kernel reads no further
	_ = panel[sgemmNR*kc-1]
	kc8 := kc &^ 7
	if kc8 > 0 {
		packTransposed16AVX2(kc8, &b[0], ldb, &panel[0])
	}
	for p := kc8; p < kc; p++ {
		for j := 0; j < sgemmNR; j++ {
			panel[p*sgemmNR+j] = b[j*ldb+p]
		}
	}
}
