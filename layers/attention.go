package layers

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MultiHeadSelfAttention is multi-head scaled dot-product self-attention over
// a batch of B sequences of T positions, with activations flat (B*T, D).
type MultiHeadSelfAttention struct {
	Batch, SeqLen, D, Heads int     // B, T, D, H
	Causal                  bool    // query t sees only keys <= t
	QKV                     *Linear // D -> 3D, output columns [q | k | v], head h at [h*d, (h+1)*d) of each
	Out                     *Linear // D -> D
}

// NewMultiHeadSelfAttention checks every size up front and names the numbers
// when they do not fit together.
func NewMultiHeadSelfAttention(batch, seqLen, heads int, causal bool, qkv, out *Linear) (*MultiHeadSelfAttention, error) {
	if batch <= 0 || seqLen <= 0 || heads <= 0 {
		return nil, errors.Errorf("attention: batch %d, seq len %d, heads %d must all be positive", batch, seqLen, heads)
	}
	if qkv == nil || out == nil {
		return nil, errors.New("attention: need both the qkv and the out projection")
	}
	d := qkv.In
	if d%heads != 0 {
		return nil, errors.Errorf("attention: d_model %d is not divisible by heads %d", d, heads)
	}
	if qkv.Out != 3*d {
		return nil, errors.Errorf("attention: qkv projection is %d -> %d, want %d -> %d", qkv.In, qkv.Out, d, 3*d)
	}
	if out.In != d || out.Out != d {
		return nil, errors.Errorf("attention: out projection is %d -> %d, want %d -> %d", out.In, out.Out, d, d)
	}
	return &MultiHeadSelfAttention{Batch: batch, SeqLen: seqLen, D: d, Heads: heads, Causal: causal, QKV: qkv, Out: out}, nil
}

// Forward maps x (B*T, D) to the attention output (B*T, D) and returns the
// attention weights (B, H, T, T) (rows = queries, columns = keys) as well.
// keyMask (B, T), when non-nil, hides keys whose entry is 0. dropMask
// (B, H, T, T), when non-nil, multiplies the weights before they are applied
// to the values (entries 0 or 1/(1-p), drawn by the caller from its own
// seeded RNG); the returned weights are those before dropout.
func (a *MultiHeadSelfAttention) Forward(x, keyMask, dropMask *gorgonia.Node) (out, weights *gorgonia.Node, err error) {
	b, t, d, h := a.Batch, a.SeqLen, a.D, a.Heads
	dh := d / h
	if s := x.Shape(); len(s) != 2 || s[0] != b*t || s[1] != d {
		return nil, nil, errors.Errorf("attention: input shape %v, want (B*T, D) = (%d, %d)", s, b*t, d)
	}
	if dropMask != nil {
		if s := dropMask.Shape(); !s.Eq(tensor.Shape{b, h, t, t}) {
			return nil, nil, errors.Errorf("attention: dropout mask shape %v, want (%d, %d, %d, %d)", s, b, h, t, t)
		}
	}
	qkv, err := a.QKV.Forward(x) // (B*T, 3D)
	if err != nil {
		return nil, nil, err
	}
	if qkv, err = gorgonia.Reshape(qkv, tensor.Shape{b, t, 3, h, dh}); err != nil { // (B, T, 3, H, d)
		return nil, nil, errors.Wrap(err, "attention: split heads")
	}
	heads, err := gorgonia.Transpose(qkv, 2, 0, 3, 1, 4) // (3, B, H, T, d)
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention: split heads")
	}
	var qkvHeads [3]*gorgonia.Node
	for i := range qkvHeads {
		if qkvHeads[i], err = gorgonia.Slice(heads, gorgonia.S(i)); err != nil { // (B, H, T, d)
			return nil, nil, errors.Wrap(err, "attention: split q, k, v")
		}
	}
	q, k, v := qkvHeads[0], qkvHeads[1], qkvHeads[2]
	scores, err := gorgonia.BatchedMatMul(q, k, false, true) // (B, H, T, T)
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention: q k^T")
	}
	if weights, err = MaskedSoftmax(scores, keyMask, a.Causal, 1/math.Sqrt(float64(dh))); err != nil { // (B, H, T, T)
		return nil, nil, err
	}
	applied := weights
	if dropMask != nil {
		if applied, err = gorgonia.HadamardProd(weights, dropMask); err != nil { // (B, H, T, T)
			return nil, nil, errors.Wrap(err, "attention: dropout")
		}
	}
	y, err := gorgonia.BatchedMatMul(applied, v) // (B, H, T, d)
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention: weights v")
	}
	if y, err = gorgonia.Transpose(y, 0, 2, 1, 3); err != nil { // (B, T, H, d)
		return nil, nil, errors.Wrap(err, "attention: merge heads")
	}
	if y, err = gorgonia.Reshape(y, tensor.Shape{b * t, d}); err != nil { // (B*T, D)
		return nil, nil, errors.Wrap(err, "attention: merge heads")
	}
	if out, err = a.Out.Forward(y); err != nil { // (B*T, D)
		return nil, nil, err
	}
	return out, weights, nil
}
