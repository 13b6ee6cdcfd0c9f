package kernels

import "testing"

// TestTranspose: every element of every shape lands at its transposed
// place, for shapes around and across the tile size, in parallel or not.
func TestTranspose(t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {1, 7}, {7, 1}, {63, 65}, {64, 64}, {130, 3}, {768, 2304}} {
		rows, cols := s[0], s[1]
		src := make([]float32, rows*cols)
		for i := range src {
			src[i] = float32(i)
		}
		dst := make([]float32, rows*cols)
		Transpose(dst, src, rows, cols)
		for r := range rows {
			for c := range cols {
				if dst[c*rows+r] != src[r*cols+c] {
					t.Fatalf("%dx%d: dst[%d][%d] = %v, want %v", rows, cols, c, r, dst[c*rows+r], src[r*cols+c])
				}
			}
		}
	}
}

func BenchmarkTranspose(b *testing.B) {
	rows, cols := 768, 3072
	src, dst := make([]float32, rows*cols), make([]float32, rows*cols)
	b.SetBytes(int64(4 * rows * cols))
	for b.Loop() {
		Transpose(dst, src, rows, cols)
	}
}
