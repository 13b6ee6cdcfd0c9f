package ops

import "github.com/attnscope/attnscope/internal/kernels"

// TimesTransposed writes y (n, Rows) = x (n, Cols) · sᵀ in float32, the
// stored matrix read in place a part at a time: LinearStored's product
// without a graph, for the analyses that multiply by a mapped unembedding
// (bit-identical to the widened matrix's float32 GEMM, as GemmHalf is). A
// fault reading the mapping is an error naming the file (ReadMapped).
func (s *Stored) TimesTransposed(x []float32, n int, y []float32) error {
	h, halves, row := s.half(), s.halves(), 0
	for i, p := range s.Parts {
		err := ReadMapped(s.Name, p.File, func() {
			kernels.GemmHalf(h, false, true, n, p.Rows, s.Cols, x, s.Cols, halves[i], s.Cols, 0, y[row:], s.Rows) // columns [row, row+p.Rows) of (n, Rows)
		})
		if err != nil {
			return err
		}
		row += p.Rows
	}
	return nil
}
