package model

import (
	"math/rand/v2"
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/layers"
)

// The per-step inputs and outputs of a built graph, so callers (train,
// inspect) never reach into node values. Feed (build.go) sets the tokens,
// targets and loss mask; DrawDropout the dropout masks. The readers return
// what the last run of the graph's machine left: a tensor stays valid until
// the next run, and belongs to the graph (copy what must outlive the run).

// Float64s copies a Float32 or Float64 value's data (logits, a parameter)
// into a new float64 slice, which outlives the next run.
func Float64s(v gorgonia.Value) ([]float64, error) { return AppendFloat64s(nil, v) }

// AppendFloat64s is Float64s appended to dst, in its memory when it has
// the room (the decoder's logits at every step).
func AppendFloat64s(dst []float64, v gorgonia.Value) ([]float64, error) {
	if v == nil {
		return nil, errors.New("no value")
	}
	d, ok := v.(*tensor.Dense)
	if !ok || d == nil {
		return nil, errors.Errorf("unexpected value %T: want a dense tensor", v)
	}
	switch d.Dtype() {
	case tensor.Float64:
		return append(dst, d.Float64s()...), nil
	case tensor.Float32:
		src := d.Float32s()
		out := slices.Grow(dst, len(src))[:len(dst)+len(src)]
		to := out[len(dst):]
		// Both cores: a batch of 32 rows of GPT-2's logits is 1.6 million
		// values.
		kernels.ParallelFor(len(src), 1, func(lo, hi int) {
			for i, x := range src[lo:hi] {
				to[lo+i] = float64(x)
			}
		})
		return out, nil
	}
	return nil, errors.Errorf("unexpected data type %v: want float32 or float64", d.Dtype())
}

// CheckFeed checks one batch of batch rows of seqLen positions as
// Graph.Feed does (the lengths, every id in the vocabulary), for a caller
// that splits the batch over several graphs (train's replicas) and must
// refuse it whole, naming the position in the whole batch, before feeding
// any of them.
func (c Config) CheckFeed(batch, seqLen int, tokens, targets []int, lossMask []float64) error {
	return checkFeed(c.Vocab, batch, seqLen, tokens, targets, lossMask)
}

// DrawDropout fills every layer's attention dropout mask for one step from
// rng (see layers.FillDropoutMask: 0 with probability p, else 1/(1-p)),
// layer by layer from the one stream. A graph without dropout masks (not
// Train, or Dropout 0) has nothing to fill.
func (gr *Graph) DrawDropout(p float64, rng *rand.Rand) error {
	for l := range gr.DropoutMasks {
		if err := gr.DrawLayerDropout(l, p, rng); err != nil {
			return err
		}
	}
	return nil
}

// DrawLayerDropout fills layer l's dropout mask from rng, as DrawDropout
// does for each layer in turn: graphs that each hold some rows of one batch
// draw the whole batch's masks by taking every layer's turn one graph after
// the other.
func (gr *Graph) DrawLayerDropout(l int, p float64, rng *rand.Rand) error {
	node := gr.DropoutMasks[l]
	mask, ok := node.Value().(*tensor.Dense)
	if !ok {
		return errors.Errorf("dropout mask %s holds no tensor", node.Name())
	}
	return layers.FillDropoutMask(mask, p, rng)
}

// LossValue is the loss of the last run.
func (gr *Graph) LossValue() (float64, error) {
	switch x := nodeData(gr.Loss).(type) {
	case float32:
		return float64(x), nil
	case float64:
		return x, nil
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), nil
		}
	case []float64:
		if len(x) == 1 {
			return x[0], nil
		}
	}
	return 0, errors.New("loss: no value (run the machine first)")
}

// LogitsValue is the (B*T, V) logits of the last run, in the model's dtype.
func (gr *Graph) LogitsValue() (*tensor.Dense, error) {
	return denseValue(gr.Logits, "logits")
}

func nodeData(n *gorgonia.Node) any {
	if v := n.Value(); v != nil {
		return v.Data()
	}
	return nil
}

func denseValue(n *gorgonia.Node, what string) (*tensor.Dense, error) {
	d, ok := n.Value().(*tensor.Dense)
	if !ok || d == nil {
		return nil, errors.Errorf("%s: no value (run the machine first)", what)
	}
	return d, nil
}

// Argmax is the index of row's largest value, the first on a tie: the
// prediction a row of logits makes.
func Argmax[T float32 | float64](row []T) int {
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	return best
}
