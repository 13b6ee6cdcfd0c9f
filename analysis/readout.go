package analysis

import (
	"math"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// readout is what turns a residual vector into logits, in float64: the
// final norm (ln_f, when the blocks have norms) and the LM head, whose
// weight is the token embedding's when the model ties them. The logit lens
// applies it whole; direct logit attribution splits it over the parts of
// the stream, with the norm's divisor fixed at the whole vector's so that
// the parts add up to the logit.
type readout struct {
	d, vocab     int
	norm         string    // model.NormLayer or model.NormRMS; "" without a final norm
	eps          float64   // the norm's epsilon
	normW, normB []float64 // ln_f (D); normB nil without a bias
	unemb        []float64 // (V, D)
	bias         []float64 // lm_head.bias (V), or nil
}

func newReadout(m *model.Model) (*readout, error) {
	cfg := m.Config
	r := &readout{d: cfg.DModel, vocab: cfg.Vocab, eps: cfg.Eps()}
	get := func(name string) ([]float64, error) {
		p := m.Param(name)
		if p == nil {
			return nil, nil
		}
		x, err := model.Float64s(p)
		return x, errors.Wrap(err, name)
	}
	var err error
	if r.unemb, err = get(cfg.UnembeddingName()); err != nil {
		return nil, err
	}
	if r.unemb == nil {
		return nil, errors.Errorf("the model has no %s to read logits with", cfg.UnembeddingName())
	}
	if r.bias, err = get("lm_head.bias"); err != nil {
		return nil, err
	}
	if cfg.MLP {
		r.norm = cfg.NormKind()
		if r.normW, err = get("ln_f.weight"); err != nil {
			return nil, err
		}
		if r.normB, err = get("ln_f.bias"); err != nil {
			return nil, err
		}
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

// logit is row k of the unembedding times a normed vector.
func (r *readout) logit(k int, normed []float64) float64 {
	row := r.unemb[k*r.d : (k+1)*r.d]
	var s float64
	for i, v := range normed {
		s += row[i] * v
	}
	return s
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

// logits are the logits of one residual vector x (D).
func (r *readout) logits(x []float64) []float64 {
	normed := r.normed(x, r.divisor(x))
	out := make([]float64, r.vocab)
	for k := range out {
		out[k] = r.logit(k, normed) + r.shift(k)
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
