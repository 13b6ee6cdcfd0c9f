package analysis

import (
	"github.com/pkg/errors"
	"gonum.org/v1/gonum/mat"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// copyingBlock is the vocabulary rows copyingByHead reads of each
// embedding at once: 16 MB of float32 at an 8B model's width.
const copyingBlock = 1024

// byHeadCheaper reports whether the copying scores of n heads of width d
// cost less from each head's own d x d circuit (copyingByHead: 2·V·D·n·d
// multiply-adds) than from the model's one W_E^T W_U (CopyingEigen:
// V·D·D): when few heads of a wide model are picked.
func byHeadCheaper(cfg model.Config, n int) bool {
	return 2*n*cfg.DHead() < cfg.DModel
}

// copyingByHead is CopyingScores' Score of each head of hs without a
// Diagonal, from its d x d circuit (W_V W_E^T)(W_U W_O), whose eigenvalues
// are those of CopyingEigen's W_V (W_E^T W_U) W_O (the same product) and
// the V x V circuit's non-zero ones. The vocabulary is read copyingBlock
// rows at a time, each block of W_E and W_U widened to float32 once for
// every head (a mapped BF16 model's embeddings stay in the file): the
// block times the heads' stacked W_V^T and W_O (D, n·d) is one float32
// GEMM each, and each head's d x d share of the block, A^T B, another,
// added in float64 across the blocks. Llama 3.1 8B's four heads: 0.5
// TFLOP where its W_E^T W_U would be 2.2.
func copyingByHead(m *model.Model, hs [][]Head) ([]Copying, error) {
	cfg := m.Config
	var flat []Head
	for _, layer := range hs {
		flat = append(flat, layer...)
	}
	n, d, dm, vocab := len(flat), cfg.DHead(), cfg.DModel, cfg.Vocab
	if n == 0 {
		return nil, nil
	}
	values := float32Cols(dm, n*d, func(i int) mat.Matrix { return flat[i].V.T() }) // (D, n*d)
	outs := float32Cols(dm, n*d, func(i int) mat.Matrix { return flat[i].O })       // (D, n*d)
	circuits := make([][]float64, n)                                                // [head] (d, d)
	for i := range circuits {
		circuits[i] = make([]float64, d*d)
	}
	emb, unemb := make([]float32, copyingBlock*dm), make([]float32, copyingBlock*dm) // (block, D)
	a, b := make([]float32, copyingBlock*n*d), make([]float32, copyingBlock*n*d)     // (block, n*d)
	share := make([][]float32, n)                                                    // [head] (d, d)
	for i := range share {
		share[i] = make([]float32, d*d)
	}
	for lo := 0; lo < vocab; lo += copyingBlock {
		rows := min(vocab, lo+copyingBlock) - lo
		if err := paramRows32(m, "tok_emb.weight", lo, lo+rows, emb); err != nil {
			return nil, err
		}
		if err := paramRows32(m, cfg.UnembeddingName(), lo, lo+rows, unemb); err != nil {
			return nil, err
		}
		kernels.Gemm(false, false, rows, n*d, dm, emb, dm, values, n*d, 0, a, n*d) // W_E V^T of the block
		kernels.Gemm(false, false, rows, n*d, dm, unemb, dm, outs, n*d, 0, b, n*d) // W_U O of the block
		each(n, float64(rows*d*d), func(i int) {
			kernels.Gemm(true, false, d, d, rows, a[i*d:], n*d, b[i*d:], n*d, 0, share[i], d) // (d, d)
			for j, x := range share[i] {
				circuits[i][j] += float64(x)
			}
		})
	}
	out := make([]Copying, n)
	for i, h := range flat {
		score, err := eigenScore(mat.NewDense(d, d, circuits[i]))
		if err != nil {
			return nil, errors.Wrapf(err, "layer %d head %d", h.Layer, h.Index)
		}
		out[i] = Copying{Layer: h.Layer, Head: h.Index, Score: score}
	}
	return out, nil
}

// paramRows32 writes rows [r0, r1) of the 2-D parameter name into dst as
// float32: a stored one's widened, a tensor's values (rounded, for a
// float64 one).
func paramRows32(m *model.Model, name string, r0, r1 int, dst []float32) error {
	if s := m.Stored(name); s != nil {
		return errors.Wrap(s.WidenRows(dst, r0, r1), name)
	}
	shape := paramShape(m, name)
	if shape == nil {
		return errors.Errorf("the model has no tensor %s", name)
	}
	cols := shape[1]
	switch v := m.Param(name).Data().(type) {
	case []float32:
		copy(dst, v[r0*cols:r1*cols])
	case []float64:
		for i, x := range v[r0*cols : r1*cols] {
			dst[i] = float32(x)
		}
	default:
		return errors.Errorf("%s holds %T: want float32 or float64", name, v)
	}
	return nil
}
