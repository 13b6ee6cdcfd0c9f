package analysis

import (
	"fmt"
	"math"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// PatchMetric is what patching measures on a run of sequences: the mean
// over the sequences of the logit difference of Answer over Wrong at their
// last position (TransformerLens's logits_to_logit_diff), or with Loss the
// mean next-token loss over every position that has a next token: the
// next tokens of Text when given (the clean text, read on a run of the
// corrupted one patched from it), else of the run's own sequences.
type PatchMetric struct {
	Loss          bool
	Answer, Wrong int
	Text          [][]int
}

// LogitDiff is the metric of the logit of answer minus that of wrong at
// the last position.
func LogitDiff(answer, wrong int) PatchMetric { return PatchMetric{Answer: answer, Wrong: wrong} }

// String names the metric as the views and -json do.
func (pm PatchMetric) String() string {
	if pm.Loss {
		return "loss"
	}
	return "logit-diff"
}

// check refuses a logit difference of tokens outside the vocabulary or of
// a token over itself (always 0), and a loss's Text not of the shape of
// seqs or not in the vocabulary.
func (pm PatchMetric) check(cfg model.Config, seqs [][]int) error {
	if pm.Loss && pm.Text != nil {
		if err := checkSequences(cfg, pm.Text); err != nil {
			return errors.Wrap(err, "the loss's text")
		}
		if len(pm.Text) != len(seqs) || len(pm.Text[0]) != len(seqs[0]) {
			return errors.Errorf("the loss's text is %d sequences of %d tokens for a run of %d of %d; give it the run's shape", len(pm.Text), len(pm.Text[0]), len(seqs), len(seqs[0]))
		}
		return nil
	}
	if pm.Loss {
		return nil
	}
	for _, id := range []int{pm.Answer, pm.Wrong} {
		if id < 0 || id >= cfg.Vocab {
			return errors.Errorf("logit difference: token %d is outside the vocabulary [0, %d)", id, cfg.Vocab)
		}
	}
	if pm.Answer == pm.Wrong {
		return errors.Errorf("logit difference: the answer and the wrong token are both %d, whose difference is always 0", pm.Answer)
	}
	return nil
}

// weights are the (B*T, V) weights w of the logit difference as Σ logits
// ⊙ w (model.BuildOptions.MetricWeights).
func (pm PatchMetric) weights(b, t, v int) []float64 {
	w := make([]float64, b*t*v)
	for i := range b {
		last := (i*t + t - 1) * v
		w[last+pm.Answer] += 1 / float64(b)
		w[last+pm.Wrong] -= 1 / float64(b)
	}
	return w
}

// lossWeights are d loss / d logits at the run c of the loss of Text's
// next tokens: (softmax - one-hot of the target) / n at each of the n
// positions scored, as Σ logits ⊙ w's weights, which the metric equals to
// first order around c.
func (pm PatchMetric) lossWeights(c *Cache) []float64 {
	b, t := c.Batch.Size, c.Batch.SeqLen
	v := c.Logits.width()
	n := float64(b * (t - 1))
	w := make([]float64, b*t*v)
	for i := range b {
		for p := range t - 1 {
			row := i*t + p
			logits := c.Logits.Block(row)
			top := logSumExp(logits)
			for j, l := range logits {
				w[row*v+j] = math.Exp(l-top) / n
			}
			w[row*v+pm.Text[i][p+1]] -= 1 / n
		}
	}
	return w
}

// Metric is pm as a Metric of the logits of a run of seqs, as PatchStream
// and PatchHeads take it.
func (pm PatchMetric) Metric(seqs [][]int) Metric {
	switch {
	case !pm.Loss:
		return LogitDiffMetric(len(seqs[0]), pm.Answer, pm.Wrong)
	case pm.Text != nil:
		return LossMetric(pm.Text)
	}
	return LossMetric(seqs)
}

// Of is the metric of the run c, read from its logits: the logit
// difference, or the loss over the scored positions of its batch.
func (pm PatchMetric) Of(c *Cache) float64 {
	b, t := c.Batch.Size, c.Batch.SeqLen
	sum, n := 0.0, 0.0
	for row := range b * t {
		logits := c.Logits.Block(row)
		switch {
		case !pm.Loss && row%t == t-1:
			sum += logits[pm.Answer] - logits[pm.Wrong]
			n++
		case pm.Loss && pm.Text != nil && row%t < t-1:
			sum += logSumExp(logits) - logits[pm.Text[row/t][row%t+1]]
			n++
		case pm.Loss && pm.Text == nil && c.Batch.Mask[row] != 0:
			sum += logSumExp(logits) - logits[c.Batch.Targets[row]]
			n++
		}
	}
	return sum / n
}

// metricGrads asks a run for the gradient of a metric at every activation
// it keeps: the loss, or Σ logits ⊙ weights when weights is not nil.
type metricGrads struct{ weights []float64 }

// RunTokensWithGrads is RunTokensWithCache that also keeps, at every
// activation named, the gradient of metric with respect to it at this run
// (Cache.Grad): one forward and one backward pass (a loss of another Text
// one forward more), TransformerLens's
// backward hooks on the metric's backward. Activations the forward does
// not read (attn.hook_result) have none and are refused; so are weights
// kept in their file's dtype (widen the model first).
func RunTokensWithGrads(m *model.Model, seqs [][]int, metric PatchMetric, names ...string) (*Cache, error) {
	if err := checkSequences(m.Config, seqs); err != nil {
		return nil, err
	}
	if err := metric.check(m.Config, seqs); err != nil {
		return nil, err
	}
	b := tokenBatch(seqs)
	if metric.Loss && b.SeqLen < 2 {
		return nil, errors.New("loss: one token has no next token to score; give at least two")
	}
	// The backward holds about as many values as the forward, on top of it.
	at := m.Config
	at.Context = b.SeqLen
	bytes := 2*at.InferenceBytes(b.Size) - at.InferenceBytes(0)
	if err := model.CheckMemory(bytes, fmt.Sprintf("a forward and backward of %d sequences of %d tokens", b.Size, b.SeqLen), "give fewer or shorter sequences"); err != nil {
		return nil, err
	}
	grads := &metricGrads{}
	switch {
	case !metric.Loss:
		grads.weights = metric.weights(b.Size, b.SeqLen, m.Config.Vocab)
	case metric.Text != nil: // not the graph's loss: its gradient at the logits, from a forward first
		c, err := RunWithCache(m, b)
		if err != nil {
			return nil, err
		}
		grads.weights = metric.lossWeights(c)
	}
	return run(m, b, true, names, grads)
}

// gradsOf are the gradients g's run left at the activations names.
func gradsOf(g *model.Graph, names []string) (map[string]Tensor, error) {
	grads := make(map[string]Tensor, len(names))
	for _, name := range names {
		v, err := g.ActivationGrad(name)
		if err != nil {
			return nil, err
		}
		if grads[name], err = tensorOf(v); err != nil {
			return nil, errors.Wrap(err, "gradient of "+name)
		}
	}
	return grads, nil
}

// Grad is the gradient of the run's metric with respect to the named
// activation (as Get names it), which RunTokensWithGrads must have kept,
// in the activation's layout and dtype.
func (c *Cache) Grad(name string) (Tensor, error) {
	spec, err := c.Spec(name)
	if err != nil {
		return Tensor{}, err
	}
	t, ok := c.grads[spec.Name]
	if !ok {
		return Tensor{}, errors.Errorf("the run kept no gradient of %s (RunTokensWithGrads keeps those of the activations it is given)", spec.Name)
	}
	return t, nil
}
