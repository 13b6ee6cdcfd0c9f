package analysis

import (
	"math"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/model"
)

// readout is what turns a residual vector into logits, in float64: the
// final norm (ln_f, when the blocks have norms) and the LM head, whose
// weight is the token embedding's when the model ties them. The logit lens
// applies it whole; direct logit attribution splits it over the parts of
// the stream, with the norm's divisor fixed at the whole vector's so that
// the parts add up to the logit. A final soft-cap (model.final_softcap) is
// not linear: the lens applies it (logitRows), the attribution's parts add
// up to the logit before it (logit, gradient, shift).
type readout struct {
	d, vocab     int
	norm         string    // model.NormLayer or model.NormRMS; "" without a final norm
	eps          float64   // the norm's epsilon
	normW, normB []float64 // ln_f (D); normB nil without a bias
	// The unembedding (V, D): the model's own float32 values, its float64
	// ones (a float64 copy of GPT-2's would take 309 MB), or, mapped in
	// its file's dtype, read in place (a float32 copy of an 8B model's
	// would take 2.1 GB); err is the first fault reading the mapping,
	// which the readout's callers return.
	unemb32 []float32
	unemb   []float64
	stored  *ops.Stored
	err     error
	bias    []float64 // lm_head.bias (V), or nil
	softcap float64   // model.final_softcap: logits z become c·tanh(z/c); 0 none
}

func newReadout(m *model.Model) (*readout, error) {
	cfg := m.Config
	r := &readout{d: cfg.DModel, vocab: cfg.Vocab, eps: cfg.Eps(), softcap: cfg.FinalSoftcap}
	if r.stored = m.Stored(cfg.UnembeddingName()); r.stored != nil {
		return r, r.finish(m)
	}
	unemb := m.Param(cfg.UnembeddingName())
	if unemb == nil {
		return nil, errors.Errorf("the model has no %s to read logits with", cfg.UnembeddingName())
	}
	switch values := unemb.Data().(type) {
	case []float32:
		r.unemb32 = values
	case []float64:
		r.unemb = values
	default:
		return nil, errors.Errorf("%s holds %T", cfg.UnembeddingName(), values)
	}
	return r, r.finish(m)
}

// finish reads the readout's bias and final norm.
func (r *readout) finish(m *model.Model) error {
	var err error
	if r.bias, err = paramFloat64s(m, "lm_head.bias"); err != nil {
		return err
	}
	if m.Config.MLP {
		norm, err := newNorm(m, "ln_f")
		if err != nil {
			return err
		}
		r.norm, r.normW, r.normB = norm.norm, norm.normW, norm.normB
	}
	return nil
}

// paramFloat64s is the parameter name as float64, nil when the model has
// none.
func paramFloat64s(m *model.Model, name string) ([]float64, error) {
	p := m.Param(name)
	if p == nil {
		return nil, nil
	}
	x, err := model.Float64s(p)
	return x, errors.Wrap(err, name)
}

// newNorm is the readout of the norm name (ln_f, or a block's post norm)
// alone, its divisor, weight and bias, without an unembedding: the weight
// is what the norm scales by, 1 + w with norm_offset (Gemma's).
func newNorm(m *model.Model, name string) (*readout, error) {
	cfg := m.Config
	r := &readout{d: cfg.DModel, eps: cfg.Eps(), norm: cfg.NormKind()}
	get := func(name string) ([]float64, error) {
		p := m.Param(name)
		if p == nil {
			return nil, nil
		}
		x, err := model.Float64s(p)
		return x, errors.Wrap(err, name)
	}
	var err error
	if r.normW, err = get(name + ".weight"); err != nil {
		return nil, err
	}
	if r.normW == nil {
		return nil, errors.Errorf("the model has no %s.weight", name)
	}
	for i := range r.normW {
		r.normW[i] += cfg.NormScaleOffset()
	}
	if r.normB, err = get(name + ".bias"); err != nil {
		return nil, err
	}
	return r, nil
}

// divisor is the final norm's divisor at x: sqrt(var x + eps) for a
// LayerNorm, sqrt(mean x² + eps) for an RMSNorm, 1 without a norm.
func (r *readout) divisor(x []float64) float64 {
	var sum float64
	switch r.norm {
	case model.NormLayer:
		mean := meanOf(x)
		for _, v := range x {
			sum += (v - mean) * (v - mean)
		}
	case model.NormRMS:
		for _, v := range x {
			sum += v * v
		}
	default:
		return 1
	}
	return math.Sqrt(sum/float64(len(x)) + r.eps)
}

// scaled is x through the final norm's centring and weight, without its
// divisor (which the caller has applied): normed(x, 1).
func (r *readout) scaled(x []float64) []float64 { return r.normed(x, 1) }

// normed is x through the final norm with the given divisor, less the
// norm's bias: w ⊙ (x − mean x) / divisor for a LayerNorm, w ⊙ x / divisor
// for an RMSNorm, x itself without a norm. It is linear in x, so the normed
// parts of a vector sum to the normed vector.
func (r *readout) normed(x []float64, divisor float64) []float64 {
	if r.norm == "" {
		return x
	}
	var mean float64
	if r.norm == model.NormLayer {
		mean = meanOf(x)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = r.normW[i] * (v - mean) / divisor
	}
	return out
}

// row is row k of the unembedding, a copy in float64.
func (r *readout) row(k int) []float64 {
	if r.unemb != nil {
		return slices.Clone(r.unemb[k*r.d : (k+1)*r.d])
	}
	out := make([]float64, r.d)
	if r.stored != nil {
		row := make([]float32, r.d)
		if err := r.stored.WidenRows(row, k, k+1); err != nil && r.err == nil {
			r.err = err
		}
		widenInto(out, row)
		return out
	}
	for i, v := range r.unemb32[k*r.d : (k+1)*r.d] {
		out[i] = float64(v)
	}
	return out
}

// logit is row k of the unembedding times a normed vector.
func (r *readout) logit(k int, normed []float64) float64 {
	row := r.row(k)
	var s float64
	for i, v := range normed {
		s += row[i] * v
	}
	return s
}

// gradient is g with logit(k, normed(x, divisor)) = g . x for every x:
// the norm's weight and divisor folded into W_U's row k, less its mean
// for a LayerNorm (whose centring is linear too).
func (r *readout) gradient(k int, divisor float64) []float64 {
	return r.fold(r.row(k), divisor)
}

// fold turns g, in place, into g' with g . normed(x, divisor) = g' . x
// for every x: the norm's weight and divisor folded into g, less its mean
// for a LayerNorm.
func (r *readout) fold(g []float64, divisor float64) []float64 {
	if r.norm == "" {
		return g
	}
	for i := range g {
		g[i] *= r.normW[i] / divisor
	}
	if r.norm == model.NormLayer {
		mean := meanOf(g)
		for i := range g {
			g[i] -= mean
		}
	}
	return g
}

// shift is what the biases add to logit k: the norm's bias through the
// unembedding, and the head's own.
func (r *readout) shift(k int) float64 {
	var s float64
	if r.normB != nil {
		s = r.logit(k, r.normB)
	}
	if r.bias != nil {
		s += r.bias[k]
	}
	return s
}

// logitRows are the logits (P, V) of P residual vectors xs (P, D), after
// the final soft-cap when the model has one.
func (r *readout) logitRows(xs []float64) []float64 {
	out := r.linearRows(xs)
	if c := r.softcap; c > 0 {
		for i, z := range out {
			out[i] = c * math.Tanh(z/c)
		}
	}
	return out
}

// linearRows are the logits (P, V) of P residual vectors xs (P, D) before
// any soft-cap, in one GEMM, in float32 for a float32 model (as its own
// forward computes them: a logit lens over 400 positions of GPT-2 small is
// 200 GFLOP).
func (r *readout) linearRows(xs []float64) []float64 {
	p := len(xs) / r.d
	normed := make([]float64, len(xs))
	for i := range p {
		x := xs[i*r.d : (i+1)*r.d]
		copy(normed[i*r.d:], r.normed(x, r.divisor(x)))
	}
	out := r.times(normed)
	if r.normB == nil && r.bias == nil {
		return out
	}
	shifts := make([]float64, r.vocab)
	if r.normB != nil {
		shifts = r.times(r.normB)
	}
	if r.bias != nil {
		kernels.Axpy(1, r.bias, shifts)
	}
	for i := range p {
		kernels.Axpy(1, shifts, out[i*r.vocab:(i+1)*r.vocab])
	}
	return out
}

// times is rows (P, D) times W_U^T: (P, V).
func (r *readout) times(rows []float64) []float64 {
	p := len(rows) / r.d
	out := make([]float64, p*r.vocab)
	if r.unemb != nil {
		kernels.Gemm(false, true, p, r.vocab, r.d, rows, r.d, r.unemb, r.d, 0, out, r.vocab)
		return out
	}
	narrow, logits := make([]float32, len(rows)), make([]float32, len(out))
	for i, v := range rows {
		narrow[i] = float32(v)
	}
	if r.stored != nil {
		if err := r.stored.TimesTransposed(narrow, p, logits); err != nil && r.err == nil {
			r.err = err
		}
	} else {
		kernels.Gemm(false, true, p, r.vocab, r.d, narrow, r.d, r.unemb32, r.d, 0, logits, r.vocab)
	}
	for i, v := range logits {
		out[i] = float64(v)
	}
	return out
}

func meanOf(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
