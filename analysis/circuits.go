package analysis

import (
	"math"
	"math/cmplx"
	"math/rand/v2"

	"github.com/pkg/errors"
	"gonum.org/v1/gonum/mat"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// The circuit metrics of Elhage et al. (2021) and Olsson et al. (2022), read
// from the weights (composition, copying) or from attention on repeated
// random tokens (prefix matching). Weights are taken as column-vector maps
// of the residual stream: head h reads q = W_Q x, k = W_K x, v = W_V x
// (d x D each) and writes W_O y (W_O: D x d), so its query-key bilinear form
// is W_QK = W_Q^T W_K and its output-value map W_OV = W_O W_V (both D x D).
// LayerNorm and biases are left out, as in the papers.

// Head holds one head's weights as the factors of those maps (views of the
// model's matrices, converted to float64 once): W_QK and W_OV are D x D of
// rank d, so every score below is computed from the factors and d x d
// products, never from the D x D maps (at GPT-2 small's shape a pair of
// D x D products is 900 MFLOP, a d x d one under 1).
type Head struct {
	Layer, Index int
	Q, K, V      mat.Matrix // d x D
	O            mat.Matrix // D x d
}

// QK is the head's query-key bilinear form W_Q^T W_K (D x D).
func (h Head) QK() *mat.Dense {
	var qk mat.Dense
	qk.Mul(h.Q.T(), h.K)
	return &qk
}

// OV is the head's output-value map W_O W_V (D x D).
func (h Head) OV() *mat.Dense {
	var ov mat.Dense
	ov.Mul(h.O, h.V)
	return &ov
}

// rows is the view of n rows of m from row i.
func rows(m mat.Matrix, i, n int) mat.Matrix {
	_, c := m.Dims()
	return m.(interface {
		Slice(i, k, j, l int) mat.Matrix
	}).Slice(i, i+n, 0, c)
}

// Composition is how much head B of layer l+1 reads what head A of layer l
// writes, each score ||W_A W_B||_F / (||W_A||_F ||W_B||_F) in [0, 1]
// (Elhage et al.): through B's queries (Q: W_QK^B^T W_OV^A), keys
// (K: W_QK^B W_OV^A) or values (V: W_OV^B W_OV^A).
type Composition struct {
	From [2]int  `json:"from"` // (layer, head) of A
	To   [2]int  `json:"to"`   // (layer, head) of B
	Q    float64 `json:"q"`
	K    float64 `json:"k"`
	V    float64 `json:"v"`
}

// Compositions scores every head pair of consecutive layers of hs (Heads,
// or the heads HeadsOf picks: the pairs of two consecutive layers both
// picked, between the heads picked). The d x d
// products R_B L_A of every pair of two layers are blocks of one float32
// GEMM of their stacked factors (at GPT-2 small's shape 15 GFLOP in all,
// where gonum's float64 products of each pair took ten seconds); the rest
// is float64 on d x d matrices, the pairs on every core.
func Compositions(hs [][]Head) []Composition { return compositions(hs, nil) }

// compositions is Compositions telling progress, when not nil, the pairs
// of consecutive layers done of their total.
func compositions(hs [][]Head, progress func(done, total int)) []Composition {
	var out []Composition
	for l := 0; l+1 < len(hs); l++ {
		if progress != nil {
			progress(l, len(hs)-1)
		}
		writers, readers := hs[l], hs[l+1]
		if len(writers) == 0 || len(readers) == 0 || readers[0].Layer != writers[0].Layer+1 {
			continue // layers picked apart (HeadsOf) have no pairs
		}
		dm, d := writers[0].O.Dims()
		na, nb := len(writers), len(readers)
		cost := float64(6 * d * d * d)
		writes := make([]lowRank, na)
		each(na, cost, func(i int) { writes[i] = newLowRank(writers[i].O, writers[i].V) })
		reads := make([][3]lowRank, nb) // W_QK^T, W_QK and W_OV of each reading head
		each(nb, cost, func(i int) {
			b := readers[i]
			reads[i] = [3]lowRank{newLowRank(b.K.T(), b.Q), newLowRank(b.Q.T(), b.K), newLowRank(b.O, b.V)}
		})
		outs := float32Cols(dm, na*d, func(i int) mat.Matrix { return writes[i].l }) // (D, na*d)
		var middles [3][]float32                                                     // (nb*d, na*d) each
		for kind := range middles {
			ins := float32Rows(nb*d, dm, func(i int) mat.Matrix { return reads[i][kind].r })
			middles[kind] = make([]float32, nb*d*na*d)
			kernels.Gemm(false, false, nb*d, na*d, dm, ins, dm, outs, na*d, 0, middles[kind], na*d)
		}
		pairs := make([]Composition, na*nb)
		each(len(pairs), 3*cost, func(i int) {
			ia, ib := i/nb, i%nb
			var scores [3]float64
			for kind, middle := range middles {
				m := mat.NewDense(d, d, nil)
				for r := range d {
					for c := range d {
						m.Set(r, c, float64(middle[(ib*d+r)*na*d+ia*d+c]))
					}
				}
				scores[kind] = composition(reads[ib][kind], m, writes[ia])
			}
			pairs[i] = Composition{
				From: [2]int{writers[ia].Layer, writers[ia].Index}, To: [2]int{readers[ib].Layer, readers[ib].Index},
				Q: scores[0], K: scores[1], V: scores[2],
			}
		})
		out = append(out, pairs...)
	}
	if progress != nil {
		progress(len(hs)-1, len(hs)-1)
	}
	return out
}

// float32Rows stacks n matrices of d rows and cols columns, part(i), into
// one (n*d, cols) row-major float32 matrix (rows is n*d).
func float32Rows(rows, cols int, part func(i int) mat.Matrix) []float32 {
	out := make([]float32, rows*cols)
	for i, at := 0, 0; at < rows; i++ {
		p := part(i)
		r, _ := p.Dims()
		for y := range r {
			for x := range cols {
				out[(at+y)*cols+x] = float32(p.At(y, x))
			}
		}
		at += r
	}
	return out
}

// float32Cols sets n matrices of rows rows and d columns, part(i), side by
// side into one (rows, n*d) row-major float32 matrix (cols is n*d).
func float32Cols(rows, cols int, part func(i int) mat.Matrix) []float32 {
	out := make([]float32, rows*cols)
	for i, at := 0, 0; at < cols; i++ {
		p := part(i)
		_, c := p.Dims()
		for y := range rows {
			for x := range c {
				out[y*cols+at+x] = float32(p.At(y, x))
			}
		}
		at += c
	}
	return out
}

// each calls f(0), ..., f(n-1), on every core when n * cost (multiply-adds)
// is worth it.
func each(n int, cost float64, f func(i int)) {
	kernels.ParallelFor(n, cost, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}

// lowRank is the D x D map L R (L: D x d, R: d x D) as its factors and
// their Gram matrices L^T L and R R^T (d x d), from which its Frobenius
// norm and that of its product with another follow: ||L R||_F^2 =
// tr(R^T L^T L R) = Σ (L^T L) ∘ (R R^T).
type lowRank struct {
	l, r   mat.Matrix
	gl, gr *mat.Dense
}

func newLowRank(l, r mat.Matrix) lowRank {
	x := lowRank{l: l, r: r, gl: &mat.Dense{}, gr: &mat.Dense{}}
	x.gl.Mul(l.T(), l)
	x.gr.Mul(r, r.T())
	return x
}

// norm is ||L R||_F.
func (x lowRank) norm() float64 { return math.Sqrt(sumProducts(x.gl, x.gr)) }

// composition is ||x y||_F / (||x||_F ||y||_F), 0 when either is zero,
// given m = R_x L_y (d x d): ||L_x m R_y||_F^2 = tr(m^T L_x^T L_x m R_y R_y^T)
// = Σ (G_x m) ∘ (m H_y), H_y symmetric.
func composition(x lowRank, m *mat.Dense, y lowRank) float64 {
	nx, ny := x.norm(), y.norm()
	if nx == 0 || ny == 0 {
		return 0
	}
	var gm, mh mat.Dense
	gm.Mul(x.gl, m)
	mh.Mul(m, y.gr)
	return math.Sqrt(max(0, sumProducts(&gm, &mh))) / (nx * ny)
}

// sumProducts is Σ a ∘ b over two matrices of one shape.
func sumProducts(a, b *mat.Dense) float64 {
	r, c := a.Dims()
	var sum float64
	for i := range r {
		for j := range c {
			sum += a.At(i, j) * b.At(i, j)
		}
	}
	return sum
}

// Copying reads a head's full OV circuit as the map from a token attended
// to the logits it raises, C = W_U W_OV W_E^T (V x V, with W_E the token
// embedding and W_U the LM head): Score is Σλ / Σ|λ| over its eigenvalues λ
// (1: every direction copied, -1: every one suppressed), and Diagonal the
// fraction of tokens whose column's largest entry is the token itself:
// over every token up to MaxCopyingVocab; past it, for heads scored by
// their own d x d circuit (copyingByHead), over MaxDiagonalSample tokens
// evenly spaced (DiagonalSample says how many), else nil.
type Copying struct {
	Layer    int      `json:"layer"`
	Head     int      `json:"head"`
	Score    float64  `json:"score"`
	Diagonal *float64 `json:"diagonal"`
	// DiagonalSample is how many tokens, evenly spaced, Diagonal was read
	// on (MaxDiagonalSample, for the heads of a wide vocabulary scored
	// by head); 0 when it is read on every token.
	DiagonalSample int `json:"diagonal_sample,omitempty"`
}

// MaxCopyingVocab is the largest vocabulary CopyingScores builds the
// V x V circuit for; past it (GPT-2's 50257) the Score comes from a d x d
// form of the circuit: each head's own (copyingByHead, when few heads of a
// wide model are scored, with a sampled Diagonal) or the model's D x D
// shortcut (CopyingEigen, without a Diagonal).
const MaxCopyingVocab = 4096

// CopyingScores is Copying for every head.
func CopyingScores(m *model.Model, hs [][]Head) ([]Copying, error) {
	if m.Config.Vocab > MaxCopyingVocab {
		heads := 0
		for _, layer := range hs {
			heads += len(layer)
		}
		if byHeadCheaper(m.Config, heads) {
			return copyingByHead(m, hs)
		}
		return copyingEigenOnly(m, hs)
	}
	we, wu, err := embeddings(m)
	if err != nil {
		return nil, err
	}
	var out []Copying
	for _, layer := range hs {
		for _, h := range layer {
			var uo, ov, c mat.Dense
			uo.Mul(wu, h.O)    // (V, d)
			ov.Mul(&uo, h.V)   // (V, D)
			c.Mul(&ov, we.T()) // (V, V): column t is what attending to token t adds to the logits
			score, err := eigenScore(&c)
			if err != nil {
				return nil, errors.Wrapf(err, "layer %d head %d", h.Layer, h.Index)
			}
			diagonal := diagonalShare(&c)
			out = append(out, Copying{Layer: h.Layer, Head: h.Index, Score: score, Diagonal: &diagonal})
		}
	}
	return out, nil
}

// copyingEigenOnly is CopyingScores' Score of every head from CopyingEigen,
// without a Diagonal.
func copyingEigenOnly(m *model.Model, hs [][]Head) ([]Copying, error) {
	scores, err := CopyingEigen(m, hs)
	if err != nil {
		return nil, err
	}
	var out []Copying
	for l, layer := range hs {
		for i, h := range layer {
			out = append(out, Copying{Layer: h.Layer, Head: h.Index, Score: scores[l][i]})
		}
	}
	return out, nil
}

// CopyingEigen is each head's copying Score alone, [layer][head], from the
// d x d matrix W_V W_E^T W_U W_O, whose eigenvalues are the V x V circuit's
// non-zero ones (the eigenvalues of AB and BA agree but for zeros), so any
// vocabulary costs one V x D x D product for the model.
func CopyingEigen(m *model.Model, hs [][]Head) ([][]float64, error) {
	we, wu, err := embeddings(m)
	if err != nil {
		return nil, err
	}
	var eu mat.Dense
	eu.Mul(we.T(), wu) // (D, D) = W_E^T W_U
	out := make([][]float64, len(hs))
	for l, layer := range hs {
		for _, h := range layer {
			var euo, c mat.Dense
			euo.Mul(&eu, h.O) // (D, d)
			c.Mul(h.V, &euo)  // (d, d)
			score, err := eigenScore(&c)
			if err != nil {
				return nil, errors.Wrapf(err, "layer %d head %d", h.Layer, h.Index)
			}
			out[l] = append(out[l], score)
		}
	}
	return out, nil
}

// embeddings are W_E and W_U (V, D) in float64 (the same matrix when the
// model ties them).
func embeddings(m *model.Model) (we, wu *mat.Dense, err error) {
	emb, err := model.Float64s(m.Param("tok_emb.weight"))
	if err != nil {
		return nil, nil, errors.Wrap(err, "tok_emb.weight")
	}
	name := m.Config.UnembeddingName()
	unemb, err := model.Float64s(m.Param(name))
	if err != nil {
		return nil, nil, errors.Wrap(err, name)
	}
	v, dm := m.Config.Vocab, m.Config.DModel
	return mat.NewDense(v, dm, emb), mat.NewDense(v, dm, unemb), nil
}

// eigenScore is Σλ / Σ|λ| (real part of the sum) over c's eigenvalues.
func eigenScore(c *mat.Dense) (float64, error) {
	var eig mat.Eigen
	if !eig.Factorize(c, mat.EigenNone) {
		return 0, errors.New("the OV circuit's eigenvalues did not converge")
	}
	var sum complex128
	var abs float64
	for _, l := range eig.Values(nil) {
		sum += l
		abs += cmplx.Abs(l)
	}
	if abs == 0 {
		return 0, nil
	}
	return real(sum) / abs, nil
}

// diagonalShare is the fraction of columns of c whose largest entry is on
// the diagonal.
func diagonalShare(c *mat.Dense) float64 {
	n, _ := c.Dims()
	hits := 0
	for t := 0; t < n; t++ {
		best := 0
		for r := 1; r < n; r++ {
			if c.At(r, t) > c.At(best, t) {
				best = r
			}
		}
		if best == t {
			hits++
		}
	}
	return float64(hits) / float64(n)
}

// MaxPrefixTokens bounds the random tokens PrefixMatching repeats: a
// pretrained model's context (1024 for GPT-2) would make each sequence a
// forward of 2048 positions where 64 show the pattern as clearly.
const MaxPrefixTokens = 64

// MaxPrefixBatchTokens bounds the positions of one forward of
// PrefixMatching.
const MaxPrefixBatchTokens = 512

// PrefixMatching is each head's mean attention, on n sequences of random
// tokens repeated twice (the first half of the model's context, at most
// MaxPrefixTokens, then the same again), from every token of the repeat to
// the token after its earlier occurrence (Olsson et al.): [layer][head], in
// [0, 1]. The sequences are drawn from the PCG of seed and stream
// (SamplesStream for an inspection, ProbeStream for training's probe).
func PrefixMatching(m *model.Model, n int, seed, stream uint64) ([][]float64, error) {
	return prefixMatching(m, n, seed, stream, nil)
}

// prefixMatching is PrefixMatching telling progress, when not nil, the
// sequences run of n.
func prefixMatching(m *model.Model, n int, seed, stream uint64, progress func(done, total int)) ([][]float64, error) {
	cfg := m.Config
	half := min(cfg.Context/2, MaxPrefixTokens)
	if half < 2 {
		return nil, errors.Errorf("prefix matching needs a context of at least 4 positions, the model has %d", cfg.Context)
	}
	t := 2 * half
	rng := rand.New(rand.NewPCG(seed, stream))
	tokens := make([]int, n*t)
	for b := 0; b < n; b++ {
		for i := 0; i < half; i++ {
			tokens[b*t+i] = rng.IntN(cfg.Vocab)
			tokens[b*t+half+i] = tokens[b*t+i]
		}
	}
	out := make([][]float64, cfg.Layers)
	for l := range out {
		out[l] = make([]float64, cfg.Heads)
	}
	// The sequences run a few at a time: one forward of them all would
	// hold every activation of n*t positions (at GPT-2's vocabulary, its
	// logits alone are 200 KB a position).
	per := max(1, MaxPrefixBatchTokens/t)
	for lo := 0; lo < n; lo += per {
		if progress != nil {
			progress(lo, n)
		}
		k := min(per, n-lo)
		c, err := runMaps(m, &data.Batch{Size: k, SeqLen: t, Tokens: tokens[lo*t : (lo+k)*t], Targets: make([]int, k*t), Mask: make([]float64, k*t)})
		if err != nil {
			return nil, err
		}
		for l := range out {
			att, err := c.Get(model.AttnWeights(l))
			if err != nil {
				return nil, err
			}
			for h := range out[l] {
				for b := range k {
					w := att.Matrix(b, h)
					for i := 0; i+1 < half; i++ {
						out[l][h] += w[half+i][i+1] // repeat of token i -> the token after its first occurrence
					}
				}
			}
		}
	}
	if progress != nil {
		progress(n, n)
	}
	for l := range out {
		for h := range out[l] {
			out[l][h] /= float64(n * (half - 1))
		}
	}
	return out, nil
}

// Circuits gathers the metrics for a view.
type Circuits struct {
	PrefixMatching [][]float64   `json:"prefix_matching"` // [layer][head]
	Copying        []Copying     `json:"copying"`
	Composition    []Composition `json:"composition"`
	// DirectLogit is direct logit attribution on the task's examples
	// (DirectLogitAttribution), for every model; with MLP blocks it also
	// holds each layer's MLP (Attribution.MLPs). Measure leaves it to its
	// caller, which has the cached run it reads.
	DirectLogit *Attribution `json:"direct_logit,omitempty"`
	// Patching is activation patching, nil for a task other than induction.
	Patching *Patching `json:"patching,omitempty"`
	// ICL is the in-context-learning score, nil for a task other than
	// induction.
	ICL *InContext `json:"icl,omitempty"`
	// LogitLens reads the residual stream out at every depth;
	// LogitLensReadout says what it does where the readout is not linear
	// (LensReadout), "" where it is.
	LogitLens        []Lens `json:"logit_lens,omitempty"`
	LogitLensReadout string `json:"logit_lens_readout,omitempty"`
}

// Measure computes every circuit metric of m; prefix matching on n
// sequences drawn from seed (SamplesStream). progress, when not nil, hears
// each stage ("head weights", "composition", "copying", "prefix matching")
// and the units of it done of its total: layer pairs for composition,
// sequences for prefix matching, 0 of 0 for the others, which count
// nothing.
func Measure(m *model.Model, n int, seed uint64, progress func(stage string, done, total int)) (*Circuits, error) {
	return MeasureHeads(m, count(m.Config.Layers), count(m.Config.Heads), n, seed, progress)
}

// MeasureHeads is Measure with the measures read from the weights
// (composition, copying) on the heads of layers and heads alone (HeadsOf):
// copying for each, composition between those of two consecutive layers
// both picked. Prefix matching, read from the attention of one run, keeps
// every head.
func MeasureHeads(m *model.Model, layers, heads []int, n int, seed uint64, progress func(stage string, done, total int)) (*Circuits, error) {
	stage := func(name string) func(done, total int) {
		if progress == nil {
			return nil
		}
		return func(done, total int) { progress(name, done, total) }
	}
	begin := func(name string) {
		if progress != nil {
			progress(name, 0, 0)
		}
	}
	begin("head weights")
	hs, err := HeadsOf(m, layers, heads)
	if err != nil {
		return nil, err
	}
	c := &Circuits{Composition: compositions(hs, stage("composition"))}
	begin("copying")
	if c.Copying, err = CopyingScores(m, hs); err != nil {
		return nil, err
	}
	if c.PrefixMatching, err = prefixMatching(m, n, seed, SamplesStream, stage("prefix matching")); err != nil {
		return nil, err
	}
	return c, nil
}
