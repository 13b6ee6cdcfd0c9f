package analysis

import (
	"math"

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
	sampled, err := sampledColumns(m, values, n*d)
	if err != nil {
		return nil, err
	}
	best := make([]columnBest, n) // [head] the largest entry of each sampled column so far
	for i := range best {
		best[i] = newColumnBest(len(sampled.tokens))
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
			best[i].update(lo, rows, b[i*d:], n*d, sampled.a[i*d:], n*d, d)
		})
	}
	out := make([]Copying, n)
	for i, h := range flat {
		score, err := eigenScore(mat.NewDense(d, d, circuits[i]))
		if err != nil {
			return nil, errors.Wrapf(err, "layer %d head %d", h.Layer, h.Index)
		}
		diagonal := best[i].share(sampled.tokens)
		out[i] = Copying{Layer: h.Layer, Head: h.Index, Score: score, Diagonal: &diagonal, DiagonalSample: sampled.size(vocab)}
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

// MaxDiagonalSample is how many tokens copyingByHead reads the diagonal
// share on, evenly spaced through the vocabulary (every token of a smaller
// one): each costs V·d multiply-adds a head, where the share over every
// token of Llama 3.1 8B's vocabulary would cost 2.1 T a head.
const MaxDiagonalSample = 1024

// sampledTokens are the tokens whose columns of the V x V circuit
// copyingByHead reads, and a (S, n·d): each one's W_E row times the heads'
// stacked W_V^T, column t's right factor (C = (W_U W_O)(W_E W_V^T)^T).
type sampledTokens struct {
	tokens []int
	a      []float32
}

// size is Copying.DiagonalSample for a vocabulary of v tokens: 0 when
// every token is read.
func (s sampledTokens) size(v int) int {
	if len(s.tokens) == v {
		return 0
	}
	return len(s.tokens)
}

// sampledColumns reads the sampled tokens' rows of W_E and multiplies them
// by values (D, cols), the heads' stacked W_V^T.
func sampledColumns(m *model.Model, values []float32, cols int) (sampledTokens, error) {
	v, dm := m.Config.Vocab, m.Config.DModel
	n := min(v, MaxDiagonalSample)
	s := sampledTokens{tokens: make([]int, n), a: make([]float32, n*cols)}
	rows, row := make([]float32, n*dm), make([]float32, dm)
	for j := range s.tokens {
		s.tokens[j] = j * v / n
		if err := paramRows32(m, "tok_emb.weight", s.tokens[j], s.tokens[j]+1, row); err != nil {
			return sampledTokens{}, err
		}
		copy(rows[j*dm:], row)
	}
	kernels.Gemm(false, false, n, cols, dm, rows, dm, values, cols, 0, s.a, cols) // (S, n*d)
	return s, nil
}

// columnBest tracks, for each sampled column of one head's circuit, its
// largest entry so far and the row holding it (the first among equals, as
// diagonalShare takes it).
type columnBest struct {
	value  []float32
	row    []int
	scores []float32 // (copyingBlock, S) scratch
}

func newColumnBest(s int) columnBest {
	b := columnBest{value: make([]float32, s), row: make([]int, s), scores: make([]float32, copyingBlock*s)}
	for j := range b.value {
		b.value[j] = float32(math.Inf(-1))
	}
	return b
}

// update reads rows [lo, lo+rows) of the sampled columns: the block's
// W_U W_O (rows, d) at b (leading dimension ldb) times the sampled tokens'
// factors (S, d) at a (leading dimension lda), transposed.
func (c columnBest) update(lo, rows int, b []float32, ldb int, a []float32, lda, d int) {
	s := len(c.value)
	kernels.Gemm(false, true, rows, s, d, b, ldb, a, lda, 0, c.scores, s) // (rows, S)
	for r := range rows {
		for j, x := range c.scores[r*s : (r+1)*s] {
			if x > c.value[j] {
				c.value[j], c.row[j] = x, lo+r
			}
		}
	}
}

// share is the fraction of the sampled columns whose largest entry is on
// the diagonal.
func (c columnBest) share(tokens []int) float64 {
	hits := 0
	for j, t := range tokens {
		if c.row[j] == t {
			hits++
		}
	}
	return float64(hits) / float64(len(tokens))
}
