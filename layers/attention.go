package layers

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
)

// MultiHeadSelfAttention is multi-head scaled dot-product self-attention over
// a batch of B sequences of T positions, with activations flat (B*T, D).
type MultiHeadSelfAttention struct {
	Batch, SeqLen, D, Heads int     // B, T, D, H
	Causal                  bool    // query t sees only keys <= t
	QKV                     *Linear // D -> 3D, output columns [q | k | v], head h at [h*d, (h+1)*d) of each
	Out                     *Linear // D -> D
	Path                    Path    // which ops Forward writes; "" is Fused (QKV and Out have their own)
	// HeadMask and HeadFill, when both are set, ablate heads: the head
	// outputs y (B, H, T, d) become y*HeadMask + HeadFill before the head
	// merge. A mask of ones and a fill of zeros leave the output unchanged;
	// mask 0 with fill 0 removes a head (zero ablation), mask 0 with the
	// head's mean output puts that in its place (mean ablation). Both are
	// (B, H, T, d) inputs the caller sets before each run.
	HeadMask, HeadFill *gorgonia.Node
	// Context is set by Forward: the head outputs (B, H, T, d) before the
	// head mask, for callers that average them (mean ablation).
	Context *gorgonia.Node
}

// name is the attention's node-name prefix, from its weights' checkpoint
// names: "blocks.0.attn.qkv.weight" -> "blocks.0.attn".
func (a *MultiHeadSelfAttention) name() string { return parentOf(prefixOf(a.QKV.Weight)) }

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
//
// On the Gorgonia path (a.Path, see gorgonia.go) the nodes are Gorgonia's
// own: Mul and BroadcastAdd for the projections, Reshape, Transpose and
// Slice for the heads, BatchedMatMul for both products, HadamardProd for
// dropout; only the masked softmax is internal/ops'. Nodes are named
// after the layer: "blocks.0.attn.qkv", ".heads", ".scores", ".weights",
// ".context", ".merged", ".out".
//
// The fused path's nodes: the fused projection, the head split (reshape to
// (B, T, 3, H, d) and permute to (3, B, H, T, d) in one op), q k^T per
// (batch, head) pair, the masked softmax, the weighted sum of v per pair,
// the head merge (permute back and reshape) and the output projection. The
// split, merge and products are internal/ops': equal to
// Reshape/Transpose/BatchedMatMul, gradients included, but without their
// per-step allocations and iterator copies.
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
	if (a.HeadMask == nil) != (a.HeadFill == nil) {
		return nil, nil, errors.New("attention: head mask and head fill are set together or not at all")
	}
	for _, in := range []*gorgonia.Node{a.HeadMask, a.HeadFill} {
		if in != nil && !in.Shape().Eq(tensor.Shape{b, h, t, dh}) {
			return nil, nil, errors.Errorf("attention: head mask or fill shape %v, want (B, H, T, d) = (%d, %d, %d, %d)", in.Shape(), b, h, t, dh)
		}
	}
	p := a.name()
	if a.Path == Gorgonia {
		return a.forwardGorgonia(p, x, keyMask, dropMask)
	}
	qkv, err := a.QKV.Forward(x) // (B*T, 3D)
	if err != nil {
		return nil, nil, err
	}
	heads, err := NameAs(p + ".heads")(ops.SplitHeads(qkv, ops.Heads{B: b, T: t, H: h, D: dh}, 3)) // (3, B, H, T, d): q, k, v
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
	}
	scores, err := NameAs(p + ".scores")(ops.AttnScores(heads)) // (B, H, T, T) = q k^T
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
	}
	if weights, err = NameAs(p + ".weights")(ops.MaskedSoftmax(scores, keyMask, a.Causal, 1/math.Sqrt(float64(dh)))); err != nil { // (B, H, T, T)
		return nil, nil, err
	}
	applied := weights
	if dropMask != nil {
		if applied, err = NameAs(p + ".dropped")(gorgonia.HadamardProd(weights, dropMask)); err != nil { // (B, H, T, T)
			return nil, nil, errors.Wrap(err, "attention: dropout")
		}
	}
	y, err := NameAs(p + ".context")(ops.AttnApply(applied, heads)) // (B, H, T, d) = w v
	if err != nil {
		return nil, nil, errors.Wrap(err, "attention")
	}
	if y, err = a.ablate(p, y); err != nil { // (B, H, T, d)
		return nil, nil, err
	}
	if y, err = NameAs(p + ".merged")(ops.MergeHeads(y)); err != nil { // (B*T, D)
		return nil, nil, errors.Wrap(err, "attention")
	}
	if out, err = a.Out.Forward(y); err != nil { // (B*T, D)
		return nil, nil, err
	}
	return out, weights, nil
}

// ablate records the head outputs y (B, H, T, d) in a.Context and, when the
// attention has a head mask, returns y*HeadMask + HeadFill with Gorgonia's
// own element-wise ops (the same nodes on both paths).
func (a *MultiHeadSelfAttention) ablate(p string, y *gorgonia.Node) (*gorgonia.Node, error) {
	a.Context = y
	if a.HeadMask == nil {
		return y, nil
	}
	kept, err := NameAs(p + ".head_masked")(gorgonia.HadamardProd(y, a.HeadMask)) // (B, H, T, d)
	if err != nil {
		return nil, errors.Wrap(err, "attention: head mask")
	}
	return NameAs(p + ".head_ablated")(gorgonia.Add(kept, a.HeadFill)) // (B, H, T, d)
}
