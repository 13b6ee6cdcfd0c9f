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
// a batch of B sequences of T positions, with activations flat (B*T, D). It
// covers the family the options select: grouped- and multi-query heads,
// sliding windows, rotary and ALiBi positions, and (with NewLatentAttention)
// multi-head latent attention.
type MultiHeadSelfAttention struct {
	Batch, SeqLen, D, Heads int     // B, T, D, H
	QKV                     *Linear // D -> H*d + 2*G*d, output columns [q | k | v], head h at [h*d, (h+1)*d) of each; nil with Latent
	Latent                  *Latent // multi-head latent attention's projections, or nil
	Out                     *Linear // H*d -> D
	AttentionOptions
	// Tap reads and may replace the layer's activations (q, k, v, scores,
	// weights, head_out, result: see Tap), or nil.
	Tap Tap
	// ResultWeight is W_out (D, H*d) widened, for each head's result when
	// Out reads a weight kept in its file's dtype (Linear.Stored); unused
	// otherwise.
	ResultWeight *gorgonia.Node
}

// Latent holds the projections of multi-head latent attention (DeepSeek-V2):
// keys and values are up-projected, for every head, from one r-wide latent
// per token, which is all a decoding cache has to keep.
type Latent struct {
	Q    *Linear // D -> D: the queries
	Down *Linear // D -> r: the latent
	Up   *Linear // r -> 2D: k and v of every head, output columns [k | v]
}

// AttentionOptions are the choices of a MultiHeadSelfAttention. The zero
// value is causal multi-head attention on the fused path, with no position
// information inside the layer.
type AttentionOptions struct {
	Path          Path // which ops Forward writes; "" is Fused (the projections have their own)
	Bidirectional bool // every query sees every key; false: query t sees only keys <= t
	// KVHeads is the number G of key and value heads: each serves H/G
	// consecutive query heads (grouped-query attention; 1 is multi-query).
	// 0 means H.
	KVHeads int
	// Window > 0 lets each query see only its last Window keys, itself
	// included (a band in the mask).
	Window int
	// HeadDim is each head's width d; 0 means D/H. Set apart from D/H the
	// heads concatenate to H*d channels, which the out projection maps back
	// to D (Gemma, Qwen 3, Mistral Nemo).
	HeadDim int
	// RotaryFreqs, when not empty, turns q and k by rotary position
	// embeddings with these per-pair inverse frequencies (ops.Rotary:
	// rotate-half pairs (i, i+R/2) on the first R = 2·len channels of each
	// head, as GPT-NeoX and Llama; the rest pass unturned).
	RotaryFreqs []float64
	// ALiBi adds Press et al.'s linear bias -m_h * (i - j) to the scaled
	// scores, with the slopes m_h of ALiBiSlopes.
	ALiBi bool
	// QKNorm, when not nil, normalises each head's q and k by an RMSNorm
	// over its d channels after the head split, before rotary positions
	// (Qwen 3's q_norm and k_norm), or with QKNorm.All the whole q and k
	// projections before the split (OLMo 2's).
	QKNorm *QKNorm
	// Scale > 0 is the scores' factor in place of 1/sqrt(d): 1 is
	// GPT-Neo's unscaled attention, Gemma's query_pre_attn_scalar^-0.5.
	Scale float64
	// SoftCap > 0 caps the scaled scores s at SoftCap·tanh(s/SoftCap)
	// before the mask (Gemma 2's attn_logit_softcapping).
	SoftCap float64
}

// headDim is d, each head's width: HeadDim, or D/H when it is 0.
func (o AttentionOptions) headDim(d, heads int) int {
	if o.HeadDim == 0 {
		return d / heads
	}
	return o.HeadDim
}

// rotaryDims is R, the channels of a head rotary positions turn (0: none).
func (o AttentionOptions) rotaryDims() int { return 2 * len(o.RotaryFreqs) }

// kvHeads is G, the number of key and value heads.
func (o AttentionOptions) kvHeads(heads int) int {
	if o.KVHeads == 0 {
		return heads
	}
	return o.KVHeads
}

// AttentionInputs are the optional graph inputs of Forward; a nil field
// leaves its step out.
//
//	KeyMask   (B, T)        1 keeps a key, 0 hides it (padding)
//	Dropout   (B, H, T, T)  0 or 1/(1-p), multiplies the weights before they
//	                        meet v (drawn by the caller from its own seeded
//	                        RNG, see FillDropoutMask)
//
// Interventions on the head outputs (ablating a head, patching one in from
// another run) go through the layer's Tap at "<layer>.head_out".
type AttentionInputs struct {
	KeyMask, Dropout *gorgonia.Node
}

// AttentionOutput is what Forward built.
//
//	Out      (B*T, D)      the layer's output, after the output projection
//	Weights  (B, H, T, T)  softmax(q k^T / sqrt(d)) over allowed keys, rows =
//	                       queries, columns = keys, before dropout
//	Heads    (B, H, T, d)  each head's weighted sum of v, as the Tap left it
type AttentionOutput struct {
	Out, Weights, Heads *gorgonia.Node
}

// name is the attention's node-name prefix, from its weights' checkpoint
// names: "blocks.0.attn.out.weight" -> "blocks.0.attn".
func (a *MultiHeadSelfAttention) name() string { return parentOf(prefixOf(a.Out.Weight)) }

// NewMultiHeadSelfAttention checks every size up front and names the numbers
// when they do not fit together. QKV and Out keep the paths they have; use
// SetPath to move the whole layer.
func NewMultiHeadSelfAttention(batch, seqLen, heads int, qkv, out *Linear, opts AttentionOptions) (*MultiHeadSelfAttention, error) {
	if qkv == nil || out == nil {
		return nil, errors.New("attention: need both the qkv and the out projection")
	}
	a := &MultiHeadSelfAttention{Batch: batch, SeqLen: seqLen, D: qkv.In, Heads: heads, QKV: qkv, Out: out, AttentionOptions: opts}
	if err := a.checkSizes(); err != nil {
		return nil, err
	}
	d, kv, dh := a.D, a.kvHeads(heads), a.dHead()
	if want := (heads + 2*kv) * dh; qkv.Out != want {
		return nil, errors.Errorf("attention: qkv projection is %d -> %d, want %d -> %d", qkv.In, qkv.Out, d, want)
	}
	if err := opts.QKNorm.check(heads, kv, dh); err != nil {
		return nil, err
	}
	return a, nil
}

// NewLatentAttention is NewMultiHeadSelfAttention for multi-head latent
// attention: queries from latent.Q, keys and values from latent.Up of
// latent.Down. Rotary positions are refused: they need DeepSeek's decoupled
// rotary key, which is not built here.
func NewLatentAttention(batch, seqLen, heads int, latent Latent, out *Linear, opts AttentionOptions) (*MultiHeadSelfAttention, error) {
	if latent.Q == nil || latent.Down == nil || latent.Up == nil || out == nil {
		return nil, errors.New("attention: latent attention needs the q, down, up and out projections")
	}
	a := &MultiHeadSelfAttention{Batch: batch, SeqLen: seqLen, D: latent.Q.In, Heads: heads, Latent: &latent, Out: out, AttentionOptions: opts}
	if err := a.checkSizes(); err != nil {
		return nil, err
	}
	d, r := a.D, latent.Down.Out
	if err := CheckOptions(d, heads, max(r, 1), opts, optionName); err != nil {
		return nil, errors.Wrap(err, "attention")
	}
	switch {
	case latent.Q.Out != d:
		return nil, errors.Errorf("attention: q projection is %d -> %d, want %d -> %d", latent.Q.In, latent.Q.Out, d, d)
	case latent.Down.In != d || r <= 0:
		return nil, errors.Errorf("attention: latent down projection is %d -> %d, want %d -> r", latent.Down.In, r, d)
	case latent.Up.In != r || latent.Up.Out != 2*d:
		return nil, errors.Errorf("attention: latent up projection is %d -> %d, want %d -> %d", latent.Up.In, latent.Up.Out, r, 2*d)
	}
	return a, nil
}

// checkSizes checks what every kind of attention needs.
func (a *MultiHeadSelfAttention) checkSizes() error {
	b, t, d, h, o := a.Batch, a.SeqLen, a.D, a.Heads, a.AttentionOptions
	switch {
	case b <= 0 || t <= 0:
		return errors.Errorf("attention: batch %d and seq len %d must be positive", b, t)
	case CheckOptions(d, h, 0, o, optionName) != nil:
		return errors.Wrap(CheckOptions(d, h, 0, o, optionName), "attention")
	case a.Out.In != h*a.dHead() || a.Out.Out != d:
		return errors.Errorf("attention: out projection is %d -> %d, want %d -> %d", a.Out.In, a.Out.Out, h*a.dHead(), d)
	}
	return nil
}

// ALiBiSlopes are the per-head slopes of Press et al. (2022): for H a power
// of two, the geometric sequence 2^(-8/H), 2^(-16/H), ..., 2^(-8); otherwise
// the slopes of the largest power of two n < H, followed by every other
// slope of 2n, the first H-n of them.
func ALiBiSlopes(heads int) []float64 {
	geometric := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Pow(2, -8*float64(i+1)/float64(n))
		}
		return s
	}
	n := 1
	for n*2 <= heads {
		n *= 2
	}
	slopes := geometric(n)
	for i := 0; len(slopes) < heads; i += 2 {
		slopes = append(slopes, geometric(2 * n)[i])
	}
	return slopes
}

// mask is what the masked softmax hides and adds.
func (a *MultiHeadSelfAttention) mask() ops.Mask {
	m := ops.Mask{Causal: !a.Bidirectional, Window: a.Window}
	if a.ALiBi {
		m.Slopes = ALiBiSlopes(a.Heads)
	}
	return m
}

// project is the fused projection x (B*T, D) -> [q | k | v] (B*T, D + 2*G*d);
// with a latent, q and the up-projection of the latent, concatenated.
func (a *MultiHeadSelfAttention) project(p string, x *gorgonia.Node) *gorgonia.Node {
	if a.Latent == nil {
		return a.QKV.forward(x) // (B*T, D + 2*G*d)
	}
	q := a.Latent.Q.forward(x)                          // (B*T, D)
	kv := a.Latent.Up.forward(a.Latent.Down.forward(x)) // (B*T, 2D) from the latent (B*T, r)
	if a.Path == Gorgonia {
		return node(p + ".qkv")(gorgonia.Concat(1, q, kv)) // (B*T, 3D)
	}
	return node(p + ".qkv")(ops.ConcatColumns(q, kv)) // (B*T, 3D)
}

// Forward adds multi-head self-attention of x to the graph:
//
//	x        (B*T, D)      input rows, row-major (batch, position)
//	q, k, v  (B, H, T, d)  x W_qkv^T + b_qkv split into heads, d = D/H
//	Weights  (B, H, T, T)  softmax(q k^T / sqrt(d)) over the keys a query may
//	                       see (causal: keys <= its position; KeyMask: keys
//	                       not padded); hidden keys get exactly 0
//	Heads    (B, H, T, d)  Weights (times Dropout) · v
//	Out      (B*T, D)      Heads merged back to (B*T, D), then W_out, b_out
//
// With a Tap, each of q, k, v (after rotary positions), the scores (scaled,
// soft-capped, biased and masked: ops.MaskScores), the weights, the head
// outputs and each head's result (its head output through its slice of
// W_out, (H, B, T, D)) goes through it where it is computed; q, k, v and
// the scores and result are built only when the Tap wants them.
//
// Which nodes each path writes is in the package doc and gorgonia.go; both
// compute the same function of the same weights.
func (a *MultiHeadSelfAttention) Forward(x *gorgonia.Node, in AttentionInputs) (built AttentionOutput, err error) {
	defer raise.Catch(&err)
	return a.forward(x, in), nil
}

func (a *MultiHeadSelfAttention) forward(x *gorgonia.Node, in AttentionInputs) AttentionOutput {
	a.check(x, in)
	p := a.name()
	if a.Path == Gorgonia || wants(a.Tap, p+".q_in", p+".k_in", p+".q", p+".k", p+".v") {
		return a.forwardGorgonia(x, in)
	}
	sizes, kv := ops.Heads{B: a.Batch, T: a.SeqLen, H: a.Heads, D: a.dHead()}, a.kvHeads(a.Heads)
	qkv := a.normalizeQKV(p, a.project(p, x)) // (B*T, H*d + 2*G*d)
	var heads *gorgonia.Node
	if kv == a.Heads {
		heads = node(p + ".heads")(ops.SplitHeads(qkv, sizes, 3)) // (3, B, H, T, d): q, k, v
	} else {
		heads = node(p + ".heads")(ops.SplitGroupedHeads(qkv, sizes, kv)) // (3, B, H, T, d): k, v of head h from kv head h/(H/G)
	}
	if len(a.RotaryFreqs) > 0 {
		heads = node(p + ".rotated")(ops.Rotary(heads, a.RotaryFreqs, 0)) // (3, B, H, T, d): q, k turned by position
	}
	scores := node(p + ".scores")(ops.AttnScores(heads))                                                       // (B, H, T, T) = q k^T
	weights := a.weights(p, scores, in.KeyMask)                                                                // (B, H, T, T)
	y := at(a.Tap, p+".head_out", node(p+".context")(ops.AttnApply(a.dropout(p, weights, in.Dropout), heads))) // (B, H, T, d) = w v
	merged := node(p + ".merged")(ops.MergeHeads(y))                                                           // (B*T, H*d)
	return AttentionOutput{Out: a.output(p, y, merged), Weights: weights, Heads: y}                            // (B*T, D)
}

// dHead is d, the width of one head.
func (a *MultiHeadSelfAttention) dHead() int { return a.headDim(a.D, a.Heads) }

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
}

// dropout multiplies the weights by the dropout mask, when there is one,
// with Gorgonia's own HadamardProd (the same node on both paths).
func (a *MultiHeadSelfAttention) dropout(p string, weights, mask *gorgonia.Node) *gorgonia.Node {
	if mask == nil {
		return weights
	}
	return node(p + ".dropped")(gorgonia.HadamardProd(weights, mask)) // (B, H, T, T)
}
