package layers

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// MultiHeadSelfAttention is multi-head scaled dot-product self-attention over
// a batch of B sequences of T positions, with activations flat (B*T, D).
type MultiHeadSelfAttention struct {
	Batch, SeqLen, D, Heads int     // B, T, D, H
	QKV                     *Linear // D -> 3D, output columns [q | k | v], head h at [h*d, (h+1)*d) of each
	Out                     *Linear // D -> D
	AttentionOptions
}

// AttentionOptions are the choices of a MultiHeadSelfAttention. The zero
// value is causal attention on the fused path.
type AttentionOptions struct {
	Path          Path // which ops Forward writes; "" is Fused (QKV and Out have their own)
	Bidirectional bool // every query sees every key; false: query t sees only keys <= t
}

// AttentionInputs are the optional graph inputs of Forward; a nil field
// leaves its step out.
//
//	KeyMask   (B, T)        1 keeps a key, 0 hides it (padding)
//	Dropout   (B, H, T, T)  0 or 1/(1-p), multiplies the weights before they
//	                        meet v (drawn by the caller from its own seeded
//	                        RNG, see FillDropoutMask)
//	HeadMask  (B, H, T, d)  with HeadFill: the head outputs y become
//	HeadFill  (B, H, T, d)  y*HeadMask + HeadFill before the head merge
//
// A head mask of ones and a fill of zeros change nothing; mask 0 with fill 0
// removes a head (zero ablation); mask 0 with the head's mean output puts
// that in its place (mean ablation).
type AttentionInputs struct {
	KeyMask, Dropout   *gorgonia.Node
	HeadMask, HeadFill *gorgonia.Node
}

// AttentionOutput is what Forward built.
//
//	Out      (B*T, D)      the layer's output, after the output projection
//	Weights  (B, H, T, T)  softmax(q k^T / sqrt(d)) over allowed keys, rows =
//	                       queries, columns = keys, before dropout
//	Heads    (B, H, T, d)  each head's weighted sum of v, before the head mask
type AttentionOutput struct {
	Out, Weights, Heads *gorgonia.Node
}

// name is the attention's node-name prefix, from its weights' checkpoint
// names: "blocks.0.attn.qkv.weight" -> "blocks.0.attn".
func (a *MultiHeadSelfAttention) name() string { return parentOf(prefixOf(a.QKV.Weight)) }

// NewMultiHeadSelfAttention checks every size up front and names the numbers
// when they do not fit together. QKV and Out keep the paths they have; use
// SetPath to move the whole layer.
func NewMultiHeadSelfAttention(batch, seqLen, heads int, qkv, out *Linear, opts AttentionOptions) (*MultiHeadSelfAttention, error) {
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
	return &MultiHeadSelfAttention{Batch: batch, SeqLen: seqLen, D: d, Heads: heads, QKV: qkv, Out: out, AttentionOptions: opts}, nil
}

// Forward adds multi-head self-attention of x to the graph:
//
//	x        (B*T, D)      input rows, row-major (batch, position)
//	q, k, v  (B, H, T, d)  x W_qkv^T + b_qkv split into heads, d = D/H
//	Weights  (B, H, T, T)  softmax(q k^T / sqrt(d)) over the keys a query may
//	                       see (causal: keys <= its position; KeyMask: keys
//	                       not padded); hidden keys get exactly 0
//	Heads    (B, H, T, d)  Weights (times Dropout) · v
//	Out      (B*T, D)      Heads (masked by HeadMask/HeadFill) merged back
//	                       to (B*T, D), then W_out, b_out
//
// Which nodes each path writes is in the package doc and gorgonia.go; both
// compute the same function of the same weights.
func (a *MultiHeadSelfAttention) Forward(x *gorgonia.Node, in AttentionInputs) (built AttentionOutput, err error) {
	defer raise.Catch(&err)
	return a.forward(x, in), nil
}

func (a *MultiHeadSelfAttention) forward(x *gorgonia.Node, in AttentionInputs) AttentionOutput {
	a.check(x, in)
	if a.Path == Gorgonia {
		return a.forwardGorgonia(x, in)
	}
	p, dh := a.name(), a.D/a.Heads
	qkv := a.QKV.forward(x)                                                                                    // (B*T, 3D)
	heads := node(p + ".heads")(ops.SplitHeads(qkv, ops.Heads{B: a.Batch, T: a.SeqLen, H: a.Heads, D: dh}, 3)) // (3, B, H, T, d): q, k, v
	scores := node(p + ".scores")(ops.AttnScores(heads))                                                       // (B, H, T, T) = q k^T
	weights := node(p + ".weights")(ops.MaskedSoftmax(scores, in.KeyMask, ops.Mask{Causal: !a.Bidirectional}, a.scale()))        // (B, H, T, T)
	y := node(p + ".context")(ops.AttnApply(a.dropout(p, weights, in.Dropout), heads))                         // (B, H, T, d) = w v
	merged := node(p + ".merged")(ops.MergeHeads(a.ablate(p, y, in)))                                          // (B*T, D)
	return AttentionOutput{Out: a.Out.forward(merged), Weights: weights, Heads: y}                             // (B*T, D)
}

// scale is 1/sqrt(d), the scores' factor.
func (a *MultiHeadSelfAttention) scale() float64 { return 1 / math.Sqrt(float64(a.D/a.Heads)) }

// check raises an error naming the shapes when x or an input does not fit
// the layer.
func (a *MultiHeadSelfAttention) check(x *gorgonia.Node, in AttentionInputs) {
	b, t, d, h := a.Batch, a.SeqLen, a.D, a.Heads
	if s := x.Shape(); len(s) != 2 || s[0] != b*t || s[1] != d {
		raise.If(errors.Errorf("attention: input shape %v, want (B*T, D) = (%d, %d)", s, b*t, d))
	}
	if in.Dropout != nil && !in.Dropout.Shape().Eq(tensor.Shape{b, h, t, t}) {
		raise.If(errors.Errorf("attention: dropout mask shape %v, want (%d, %d, %d, %d)", in.Dropout.Shape(), b, h, t, t))
	}
	if (in.HeadMask == nil) != (in.HeadFill == nil) {
		raise.If(errors.New("attention: head mask and head fill are set together or not at all"))
	}
	for _, n := range []*gorgonia.Node{in.HeadMask, in.HeadFill} {
		if n != nil && !n.Shape().Eq(tensor.Shape{b, h, t, d / h}) {
			raise.If(errors.Errorf("attention: head mask or fill shape %v, want (B, H, T, d) = (%d, %d, %d, %d)", n.Shape(), b, h, t, d/h))
		}
	}
}

// dropout multiplies the weights by the dropout mask, when there is one,
// with Gorgonia's own HadamardProd (the same node on both paths).
func (a *MultiHeadSelfAttention) dropout(p string, weights, mask *gorgonia.Node) *gorgonia.Node {
	if mask == nil {
		return weights
	}
	return node(p + ".dropped")(gorgonia.HadamardProd(weights, mask)) // (B, H, T, T)
}

// ablate returns y*HeadMask + HeadFill when there is a head mask, with
// Gorgonia's own element-wise ops (the same nodes on both paths).
func (a *MultiHeadSelfAttention) ablate(p string, y *gorgonia.Node, in AttentionInputs) *gorgonia.Node {
	if in.HeadMask == nil {
		return y
	}
	kept := node(p + ".head_masked")(gorgonia.HadamardProd(y, in.HeadMask)) // (B, H, T, d)
	return node(p + ".head_ablated")(gorgonia.Add(kept, in.HeadFill))       // (B, H, T, d)
}
