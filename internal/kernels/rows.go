package kernels

// AddScaledRows adds x[p] times row p of a to y for p = 0, 1, ... in order:
// y[j] += x[p] * a[p*lda+j] for every j < len(y) and p < len(x), each
// product rounded to T before it is added (never fused), as the plain loop
// does and as the AVX-512 kernel does sixteen lanes at a time: every path
// gives the same bits. It is y += xᵀA for A's first len(y) columns, a
// decoding step's scores over a transposed key cache (d rows, a slot per
// column) in one call rather than d calls of Axpy.
func AddScaledRows[T float](y, x, a []T, lda int) {
	n, rows := len(y), len(x)
	if n == 0 || rows == 0 {
		return
	}
	_ = a[(rows-1)*lda+n-1] // the kernel reads no further
	if y32, ok := any(y).([]float32); ok && useAVX512 {
		addScaledRowsAVX512(n, &y32[0], &any(x).([]float32)[0], rows, &any(a).([]float32)[0], lda)
		return
	}
	for p, xp := range x {
		row := a[p*lda : p*lda+n]
		for j, v := range row {
			y[j] += T(xp * v) // the conversion rounds the product: no FMA
		}
	}
}
