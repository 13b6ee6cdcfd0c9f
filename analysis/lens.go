package analysis

import (
	"math"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// Lens is the logit lens at one depth of the residual stream (nostalgebraist
// 2020): the stream read out through the final norm (when the model has
// one) and the LM head as if the layers after it were not there, scored at
// the task's scored positions.
type Lens struct {
	Depth    int     `json:"depth"`    // 0: the embeddings; l: after block l-1
	Accuracy float64 `json:"accuracy"` // share of scored positions whose argmax is the target
	LogProb  float64 `json:"log_prob"` // mean log-probability of the target
	Correct  float64 `json:"correct"`  // mean logit of the target
}

// lensChunk is how many positions LogitLens reads out at once (their
// logits: 26 MB at GPT-2's vocabulary).
const lensChunk = 64

// LogitLens reads the residual stream after the embeddings and after every
// block of a cached run that kept it (Circuit). The last depth is the
// model's own output.
func LogitLens(c *Cache) ([]Lens, error) {
	m, b := c.Model, c.Batch
	cfg := m.Config
	n, t := b.Size, b.SeqLen
	head, err := newReadout(m)
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
		var rows []int // the scored positions
		for p := range n * t {
			if b.Mask[p] != 0 {
				rows = append(rows, p)
			}
		}
		lens := Lens{Depth: depth}
		scored := 0
		for chunk := range slices.Chunk(rows, lensChunk) {
			xs := make([]float64, 0, len(chunk)*cfg.DModel)
			for _, p := range chunk {
				xs = append(xs, stream.Block(p)...)
			}
			all := head.logitRows(xs)
			for i, p := range chunk {
				logits := all[i*cfg.Vocab : (i+1)*cfg.Vocab]
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
		}
		if scored == 0 {
			return nil, errors.New("logit lens: the examples score no position")
		}
		lens.Accuracy /= float64(scored)
		lens.LogProb /= float64(scored)
		lens.Correct /= float64(scored)
		out = append(out, lens)
	}
	return out, errors.Wrap(head.err, "logit lens")
}
