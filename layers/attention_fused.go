package layers

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// forwardFused is Forward on this package's head and batched-product ops.
func (a *MultiHeadSelfAttention) forwardFused(x, keyMask, dropMask *gorgonia.Node) (out, weights *gorgonia.Node, err error) {
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
	heads, err := splitHeads(qkv, b, t, h, 3) // (3, B, H, T, d): q, k, v
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
	}
	scores, err := attnScores(heads) // (B, H, T, T) = q k^T
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
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
	y, err := attnApply(applied, heads) // (B, H, T, d) = w v
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
	}
	if y, err = mergeHeads(y); err != nil { // (B*T, D)
		return nil, nil, errors.Wrap(err, "attention")
	}
	if out, err = a.Out.Forward(y); err != nil { // (B*T, D)
		return nil, nil, err
	}
	return out, weights, nil
}
