package kernels

// sgemmGo is sgemm's arithmetic in Go, the generic path's float32 GEMM.
// Every element of C gets what the assembly tiles give it, whichever tile
// computes it: over each block of sgemmKC steps, a chain of fused
// multiply-adds (fma32) from zero in step order, then stored in C (the
// first block when beta is 0) or added to it. So the generic path
// multiplies to the AVX2 and AVX-512 paths' bits. Rows are spread over the
// cores; one goroutine computes each element, so the split changes nothing.
func sgemmGo(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	beta, more := sgemmPrepareC(m, n, k, beta, c, ldc)
	if !more {
		return
	}
	ParallelFor(m, float64(n)*float64(k), func(lo, hi int) {
		acc := Scratch(n)
		for i := lo; i < hi; i++ {
			sgemmRowGo(transA, transB, i, n, k, a, lda, b, ldb, beta == 1, c[i*ldc:i*ldc+n], (*acc)[:n])
		}
		PutScratch(acc)
	})
}

// sgemmPrepareC does what sgemm does before its products: C scaled by a
// beta other than 0 and 1 (the products are then added to it), and C set
// to 0 when beta is 0 and there are no products (k = 0). It returns the
// beta to multiply with and whether there are products to add.
func sgemmPrepareC(m, n, k int, beta float32, c []float32, ldc int) (float32, bool) {
	if m == 0 || n == 0 {
		return beta, false
	}
	if beta != 0 && beta != 1 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				row[j] *= beta
			}
		}
		beta = 1
	}
	if k == 0 && beta == 0 {
		for i := 0; i < m; i++ {
			clear(c[i*ldc : i*ldc+n])
		}
	}
	return beta, k > 0
}

// sgemmRowGo computes row i of C (ci) block by block of depth, each block's
// products summed in acc and then stored (the first block unless add) or
// added, as the kernels' epilogues do.
func sgemmRowGo(transA, transB bool, i, n, k int, a []float32, lda int, b []float32, ldb int, add bool, ci, acc []float32) {
	rs, ps := lda, 1 // op(A)[i][p] = a[i*rs + p*ps]
	if transA {
		rs, ps = 1, lda
	}
	for pc := 0; pc < k; pc += sgemmKC {
		kc := min(sgemmKC, k-pc)
		if transB { // op(B)[p][j] = b[j*ldb+p]: column j is a contiguous run
			for j := range acc {
				var s float32
				for p, y := range b[j*ldb+pc : j*ldb+pc+kc] { // s = fma32(op(A)[i][pc+p], y, s), written out
					prod, sum := float64(a[i*rs+(pc+p)*ps])*float64(y), float64(s)
					r := prod + sum
					if mayRoundTwice(r) {
						r = roundedToOdd(prod, sum, r)
					}
					s = float32(r)
				}
				acc[j] = s
			}
		} else {
			clear(acc)
			for p := pc; p < pc+kc; p++ {
				x := a[i*rs+p*ps]
				for j, y := range b[p*ldb : p*ldb+len(acc)] { // acc[j] = fma32(x, y, acc[j]), written out
					prod, sum := float64(x)*float64(y), float64(acc[j])
					s := prod + sum
					if mayRoundTwice(s) {
						s = roundedToOdd(prod, sum, s)
					}
					acc[j] = float32(s)
				}
			}
		}
		if add || pc > 0 {
			for j, v := range acc {
				ci[j] += v
			}
		} else {
			copy(ci, acc)
		}
	}
}
