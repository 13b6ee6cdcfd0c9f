package analysis

import (
	"math"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
)

// Lens is the logit lens at one depth of the residual stream (nostalgebraist
// 2020): the stream read out through the final LayerNorm (when the model has
// one) and the LM head as if the layers after it were not there, scored at
// the task's scored positions.
type Lens struct {
	Depth    int     `json:"depth"`    // 0: the embeddings; l: after block l-1
	Accuracy float64 `json:"accuracy"` // share of scored positions whose argmax is the target
	LogProb  float64 `json:"log_prob"` // mean log-probability of the target
	Correct  float64 `json:"correct"`  // mean logit of the target
}

// LogitLens reads the residual stream after the embeddings and after every
// block of a cached run that kept it (Circuit). The last depth is the
// model's own output.
func LogitLens(c *Cache) ([]Lens, error) {
	m, b := c.Model, c.Batch
	cfg := m.Config
	n, t := b.Size, b.SeqLen
	head, err := readout(m)
	if err != nil {
		return nil, err
	}
	var out []Lens
	for depth := range cfg.Layers + 1 {
		name := model.ResidPre(0)
		if depth > 0 {
			name = model.ResidPost(depth - 1)
		}
		stream, err := c.Get(name)
		if err != nil {
			return nil, errors.Wrap(err, "logit lens")
		}
		x := stream.Data
		lens := Lens{Depth: depth}
		scored := 0
		for p := range n * t {
			if b.Mask[p] == 0 {
				continue
			}
			logits := head.apply(x[p*cfg.DModel : (p+1)*cfg.DModel])
			target := b.Targets[p]
			top := slices.Max(logits)
			var z float64
			for _, l := range logits {
				z += math.Exp(l - top)
			}
			lens.LogProb += logits[target] - top - math.Log(z)
			lens.Correct += logits[target]
			if slices.Index(logits, top) == target {
				lens.Accuracy++
			}
			scored++
		}
		if scored == 0 {
			return nil, errors.New("logit lens: the examples score no position")
		}
		lens.Accuracy /= float64(scored)
		lens.LogProb /= float64(scored)
		lens.Correct /= float64(scored)
		out = append(out, lens)
	}
	return out, nil
}

// lensHead is the model's readout in float64: ln_f (nil without MLP
// blocks), then the LM head.
type lensHead struct {
	d          int
	lnW, lnB   []float64
	lm, lmBias []float64 // (V, D), (V) or nil
	vocab      int
}

func readout(m *model.Model) (*lensHead, error) {
	cfg := m.Config
	h := &lensHead{d: cfg.DModel, vocab: cfg.Vocab}
	get := func(name string) ([]float64, error) {
		p := m.Param(name)
		if p == nil {
			return nil, nil
		}
		return model.Float64s(p)
	}
	var err error
	if h.lm, err = get("lm_head.weight"); err != nil || h.lm == nil {
		return nil, errors.Errorf("logit lens: no LM head (%v)", err)
	}
	if h.lmBias, err = get("lm_head.bias"); err != nil {
		return nil, err
	}
	if cfg.MLP {
		if h.lnW, err = get("ln_f.weight"); err != nil {
			return nil, err
		}
		if h.lnB, err = get("ln_f.bias"); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// apply is the logits of one residual vector x (D).
func (h *lensHead) apply(x []float64) []float64 {
	if h.lnW != nil {
		var mean, variance float64
		for _, v := range x {
			mean += v
		}
		mean /= float64(h.d)
		for _, v := range x {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(h.d)
		normed := make([]float64, h.d)
		for i, v := range x {
			normed[i] = (v-mean)/math.Sqrt(variance+layers.LayerNormEps)*h.lnW[i] + h.lnB[i]
		}
		x = normed
	}
	logits := make([]float64, h.vocab)
	for k := range logits {
		row := h.lm[k*h.d : (k+1)*h.d]
		for i, v := range x {
			logits[k] += row[i] * v
		}
		if h.lmBias != nil {
			logits[k] += h.lmBias[k]
		}
	}
	return logits
}
