package kernels

// transposeTile is the side of the square blocks Transpose copies, so that
// both the rows read and the rows written stay in cache.
const transposeTile = 64

// Transpose writes the (cols, rows) transpose of src, a row-major (rows,
// cols) matrix, into dst, tile by tile, the tiles' rows of dst spread over
// the workers.
func Transpose[T float](dst, src []T, rows, cols int) {
	tiles := (cols + transposeTile - 1) / transposeTile
	ParallelFor(tiles, float64(rows*transposeTile), func(lo, hi int) {
		for c0 := lo * transposeTile; c0 < min(hi*transposeTile, cols); c0 += transposeTile {
			c1 := min(c0+transposeTile, cols)
			for r0 := 0; r0 < rows; r0 += transposeTile {
				r1 := min(r0+transposeTile, rows)
				for c := c0; c < c1; c++ {
					out := dst[c*rows+r0 : c*rows+r1]
					in := src[r0*cols+c:]
					for i := range out {
						out[i] = in[i*cols]
					}
				}
			}
		}
	})
}
