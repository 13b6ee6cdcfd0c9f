package kernels

// sgemmGo is sgemm's arithmetic in Go, the generic path's float32 GEMM.
// Every element of C gets what the assembly tiles give it, whichever tile
// computes it: over each block of sgemmKC steps, a chain of fused
// multiply-adds (fma32) from zero in step order, then stored in C (the
// first block when beta is 0) or added to it. So the generic path
// multiplies to the AVX2 and AVX-512 paths' bits. Rows are spread over the
// cores; one goroutine computes each element, so the split changes nothing.
func sgemmGo(transA, transB bool, m, n, k int, a []float32, lda int, b weights, ldb int, beta float32, c []float32, ldc int) {
	beta, more := sgemmPrepareC(m, n, k, beta, c, ldc)
	if !more {
		return
	}
	ParallelFor(m, float64(n)*float64(k), func(lo, hi int) {
		acc, aRow, bRun := Scratch(n), Scratch(k), Scratch(max(n, sgemmKC))
		for i := lo; i < hi; i++ {
			sgemmRowGo(transA, transB, i, n, k, a, lda, b, ldb, beta == 1, c[i*ldc:i*ldc+n], (*acc)[:n], (*aRow)[:k], *bRun)
		}
		PutScratch(acc)
		PutScratch(aRow)
		PutScratch(bRun)
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
// added, as the kernels' epilogues do. aRow (k long) holds op(A)'s row i
// when both operands are transposed; bRun (max(n, sgemmKC) long) a run of
// 16-bit B widened.
func sgemmRowGo(transA, transB bool, i, n, k int, a []float32, lda int, b weights, ldb int, add bool, ci, acc, aRow, bRun []float32) {
	rs, ps := lda, 1 // op(A)[i][p] = a[i*rs + p*ps]
	if transA {
		rs, ps = 1, lda
	}
	var ai []float32 // op(A)'s row i, for a transposed B
	switch {
	case transB && transA:
		ai = aRow
		for p := range ai {
			ai[p] = a[p*lda+i]
		}
	case transB:
		ai = a[i*lda : i*lda+k]
	}
	for pc := 0; pc < k; pc += sgemmKC {
		kc := min(sgemmKC, k-pc)
		if transB { // op(B)[p][j] = b[j*ldb+p]: column j is a contiguous run
			for j := range acc {
				acc[j] = fmaChain(ai[pc:pc+kc], b.run(j*ldb+pc, kc, bRun))
			}
		} else {
			clear(acc)
			for p := pc; p < pc+kc; p++ {
				fmaScaled(a[i*rs+p*ps], b.run(p*ldb, len(acc), bRun), acc)
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

// fmaChain is s = fma32(x[p], y[p], s) for p in order from s = 0, fma32
// written out (it is too large to inline).
func fmaChain(x, y []float32) float32 {
	y = y[:len(x)]
	var s float32
	for p, v := range x {
		prod, sum := float64(v)*float64(y[p]), float64(s)
		r := prod + sum
		if mayRoundTwice(r) {
			r = roundedToOdd(prod, sum, r)
		}
		s = float32(r)
	}
	return s
}

// fmaScaled is acc[j] = fma32(x, y[j], acc[j]) for every j, fma32 written
// out.
func fmaScaled(x float32, y, acc []float32) {
	y = y[:len(acc)]
	xf := float64(x)
	for j, v := range y {
		prod, sum := xf*float64(v), float64(acc[j])
		r := prod + sum
		if mayRoundTwice(r) {
			r = roundedToOdd(prod, sum, r)
		}
		acc[j] = float32(r)
	}
}
