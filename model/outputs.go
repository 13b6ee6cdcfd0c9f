package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// The per-step inputs and outputs of a built graph, so callers (train,
// inspect) never reach into node values. Feed (build.go) sets the tokens,
// targets and loss mask; DrawDropout the dropout masks. The readers return
// what the last run of the graph's machine left: a tensor stays valid until
// the next run, and belongs to the graph (copy what must outlive the run).

// Float64s copies a Float32 or Float64 value's data (logits, a parameter)
// into a new float64 slice, which outlives the next run.
func Float64s(v gorgonia.Value) ([]float64, error) {
	if v == nil {
		return nil, errors.New("no value")
	}
	switch d := v.Data().(type) {
	case []float64:
		return append([]float64(nil), d...), nil
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out, nil
	}
	return nil, errors.Errorf("unexpected value type %T: want float32 or float64 data", v.Data())
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

// AttentionValue is layer l's attention weights (B, H, T, T) of the last
// run, in the model's dtype: rows are queries, columns keys.
func (gr *Graph) AttentionValue(l int) (*tensor.Dense, error) {
	if l < 0 || l >= len(gr.Attention) {
		return nil, errors.Errorf("attention: layer %d, the model has %d", l, len(gr.Attention))
	}
	return denseValue(gr.Attention[l], fmt.Sprintf("attention of layer %d", l))
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

// HeadOutputsValue is layer l's head outputs (B, H, T, d) of the last run,
// before the head mask, in the model's dtype. Only a machine of a HeadMask
// graph keeps them (NewMachine watches them there).
func (gr *Graph) HeadOutputsValue(l int) (*tensor.Dense, error) {
	if l < 0 || l >= len(gr.HeadOutputs) || gr.HeadMasks == nil {
		return nil, errors.Errorf("head outputs: layer %d of a graph built with HeadMask (it has %d layers, head mask %t)", l, len(gr.HeadOutputs), gr.HeadMasks != nil)
	}
	return denseValue(gr.HeadOutputs[l], fmt.Sprintf("head outputs of layer %d", l))
}

// ResidualValue is the residual stream (B*T, D) of the last run at depth
// l: 0 after the embeddings, l after block l-1 (a graph built with
// Residuals).
func (gr *Graph) ResidualValue(l int) (*tensor.Dense, error) {
	if l < 0 || l >= len(gr.Residuals) {
		return nil, errors.Errorf("residual stream: depth %d of a graph built with Residuals (it has %d)", l, len(gr.Residuals))
	}
	return denseValue(gr.Residuals[l], fmt.Sprintf("residual stream at depth %d", l))
}

// AttentionRows is every layer's attention weights of the last run (of a
// machine from NewMachine), copied to float64 as
// [layer][batch][head][query][key].
func (gr *Graph) AttentionRows() ([][][][][]float64, error) {
	b, h, t := gr.Opts.Batch, gr.Model.Config.Heads, gr.Opts.SeqLen
	att := make([][][][][]float64, len(gr.Attention))
	for l := range gr.Attention {
		d, err := gr.AttentionValue(l)
		if err != nil {
			return nil, err
		}
		flat := make([]float64, d.Shape().TotalSize())
		switch data := d.Data().(type) {
		case []float32:
			for i, x := range data {
				flat[i] = float64(x)
			}
		case []float64:
			copy(flat, data)
		default:
			return nil, errors.Errorf("attention of layer %d holds %v, want float32 or float64", l, d.Dtype())
		}
		if len(flat) != b*h*t*t {
			return nil, errors.Errorf("attention of layer %d has %d values, want (B, H, T, T) = (%d, %d, %d, %d)", l, len(flat), b, h, t, t)
		}
		att[l] = make([][][][]float64, b)
		for row := range b {
			att[l][row] = make([][][]float64, h)
			for hd := range h {
				block := flat[(row*h+hd)*t*t:][:t*t] // the (row, hd) (T, T) block
				rows := make([][]float64, t)
				for q := range t {
					rows[q] = block[q*t : (q+1)*t : (q+1)*t]
				}
				att[l][row][hd] = rows
			}
		}
	}
	return att, nil
}
