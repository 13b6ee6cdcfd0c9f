package generate

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/attnscope/attnscope/model"
	"github.com/pkg/errors"
)

// Options say how a token is picked from the logits.
type Options struct {
	Temperature float64 // 0 is greedy
	TopK        int     // keep the k largest logits; 0 keeps all, 1 is greedy
	TopP        float64 // keep the smallest set of probability >= TopP; in (0, 1], 1 keeps all
	Seed        uint64  // the draws' generator
}

// Greedy are the options of greedy decoding.
var Greedy = Options{TopP: 1}

// Validate names the first option outside its range, as the flag that sets it.
func (o Options) Validate() error {
	switch {
	case math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0) || o.Temperature < 0:
		return errors.Errorf("-temperature %v: must be 0 (greedy) or positive", o.Temperature)
	case o.TopK < 0:
		return errors.Errorf("-top-k %d: must be 0 (all tokens) or positive", o.TopK)
	case math.IsNaN(o.TopP) || o.TopP <= 0 || o.TopP > 1:
		return errors.Errorf("-top-p %v: must be in (0, 1]", o.TopP)
	}
	return nil
}

// greedy reports whether the options always pick the largest logit.
func (o Options) greedy() bool { return o.Temperature == 0 || o.TopK == 1 }

// Sampler picks tokens by its options, drawing from its own generator.
type Sampler struct {
	Options
	rng *rand.Rand
}

// samplerStream is the PCG stream of the draws.
const samplerStream uint64 = 0x73616d70 // "samp"

// NewSampler checks o and seeds the generator from o.Seed.
func NewSampler(o Options) (*Sampler, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Sampler{Options: o, rng: rand.New(rand.NewPCG(o.Seed, samplerStream))}, nil
}

// Pick returns the id of the token picked from one row of logits.
func (s *Sampler) Pick(logits []float64) int {
	if s.greedy() {
		return model.Argmax(logits)
	}
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	if s.TopK > 0 && s.TopK < len(order) {
		order = order[:s.TopK]
	}
	probs := make([]float64, len(order))
	top, sum := logits[order[0]], 0.0
	for i, id := range order {
		probs[i] = math.Exp((logits[id] - top) / s.Temperature)
		sum += probs[i]
	}
	kept, mass := len(order), 0.0
	for i := range probs {
		probs[i] /= sum
		mass += probs[i]
		if mass >= s.TopP {
			kept = i + 1
			break
		}
	}
	u := s.rng.Float64() * mass // one draw per pick, within the mass kept
	for i, p := range probs[:kept] {
		if u -= p; u < 0 {
			return order[i]
		}
	}
	return order[kept-1]
}
