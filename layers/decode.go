package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// DecodeInputs are the graph inputs of one decoding step of an attention
// layer, whose cache has C slots (the layer's SeqLen), G key and value heads
// and g = H/G query heads per group:
//
//	Keys, Values  (B, G, C, d)   the cached keys (rotated, with rotary
//	                             positions) and values, slot t = position
//	                             t; on the fused path transposed, (B, G, d,
//	                             C), for ops.CacheAttention
//	Latent        (B, C, r)      latent attention's cache instead: the latent
//	                             of each position, from which keys and values
//	                             are up-projected
//	Spans         (2B) Int       the fused path's: row b sees cache slots
//	                             [Spans[2b], Spans[2b+1]) and itself, at
//	                             position Spans[2b+1]
//	Bias          (B, G, g, C+1) the Gorgonia path's, added to the scaled
//	                             scores: column t < C is cache slot t,
//	                             column C the new position itself; -Inf
//	                             hides a key (an empty slot, a key outside
//	                             the window), ALiBi's -m_h*(i-j) goes here
//	Cos, Sin      (B, d)         with rotary positions: each row's angles at
//	                             its position, each angle twice (channels i
//	                             and i+R/2; cos 1 and sin 0 past R), as
//	                             RotaryTable
type DecodeInputs struct {
	Keys, Values, Latent *gorgonia.Node
	Spans, Bias          *gorgonia.Node
	Cos, Sin             *gorgonia.Node
}

// DecodeOutput is what Decode built.
//
//	Out     (B, D)        the layer's output at the new position
//	KV      (B, 2, G, d)  the new position's key (rotated) and value, for
//	                      the caller to write into the cache; nil on the
//	                      fused path, whose step writes them itself
//	Latent  (B, r)        latent attention's new latent instead of KV
type DecodeOutput struct {
	Out, KV, Latent *gorgonia.Node
}

// Decode adds one decoding step: x (B, D) is one new position per sequence,
// which attends to the cached keys and values and to itself. The fused path
// goes from the projection to the merged heads in one op
// (ops.CacheAttention, which reads the cache in place, visits only the
// slots a query sees and writes the new key and value into the slot of the
// new position). The Gorgonia path splits the heads with Reshape and
// Slice, appends the new key and value to the cache (Concat) and attends
// with BatchedMatMul and ops.BiasedSoftmax.
// Latent attention up-projects every cached latent at each step, on both
// paths. With the cache holding a prefix's keys and values, the output
// equals Forward's at the prefix's next position
// (model.TestDecoderMatchesForward).
func (a *MultiHeadSelfAttention) Decode(x *gorgonia.Node, in DecodeInputs) (built DecodeOutput, err error) {
	defer raise.Catch(&err)
	return a.decode(x, in), nil
}

func (a *MultiHeadSelfAttention) decode(x *gorgonia.Node, in DecodeInputs) DecodeOutput {
	a.checkDecode(x, in)
	if a.Latent != nil {
		return a.decodeLatent(x, in)
	}
	p, b, h := a.name()+".decode", x.Shape()[0], a.Heads
	dh, kv := a.dHead(), a.kvHeads(h)
	qkv := a.QKV.forward(x) // (B, H*d + 2*G*d)
	if a.Path != Gorgonia {
		qkv = a.normalizeQKV(p, qkv) // (B, H*d + 2*G*d): q and k heads normalised, before CacheAttention turns them
		layout := ops.Decode{H: h, G: kv, D: dh, R: a.rotaryDims(), SoftCap: a.SoftCap}
		var slopes []float64
		if a.ALiBi {
			slopes = ALiBiSlopes(h)
		}
		y := node(p + ".context")(ops.CacheAttention(qkv, in.Keys, in.Values, in.Spans, in.Cos, in.Sin, layout, a.scale(), slopes)) // (B, H*d)
		return DecodeOutput{Out: a.Out.forward(y)}                                                                                  // (B, D)
	}
	qkv = a.normalizeWhole(p, qkv)                                                    // (B, D + 2*G*d): QK-norm with All
	parts := node(p + ".parts")(gorgonia.Reshape(qkv, tensor.Shape{b, h + 2*kv, dh})) // (B, H+2G, d)
	q := a.decodeQuery(p, a.headRange(p+".q", parts, 0, h), in)                       // (B, H, d)
	k := a.decodeKey(p, a.headRange(p+".k", parts, h, kv), in)                        // (B, G, d)
	v := a.headRange(p+".v", parts, h+kv, kv)                                         // (B, G, d)
	qg := node(p + ".q_groups")(gorgonia.Reshape(q, tensor.Shape{b, kv, h / kv, dh})) // (B, G, g, d)
	keys := a.appendSlot(p+".keys", in.Keys, k)                                       // (B, G, C+1, d)
	values := a.appendSlot(p+".values", in.Values, v)                                 // (B, G, C+1, d)
	pair := tensor.Shape{b, 1, kv, dh}
	kPair := node(p + ".k_pair")(gorgonia.Reshape(k, pair))                      // (B, 1, G, d)
	vPair := node(p + ".v_pair")(gorgonia.Reshape(v, pair))                      // (B, 1, G, d)
	newKV := node(p + ".new_kv")(gorgonia.Concat(1, kPair, vPair))               // (B, 2, G, d)
	return DecodeOutput{Out: a.decodeAttend(p, qg, keys, values, in), KV: newKV} // (B, D)
}

// decodeLatent is Decode for latent attention: the new latent joins the
// cached ones, and keys and values are up-projected from all of them.
func (a *MultiHeadSelfAttention) decodeLatent(x *gorgonia.Node, in DecodeInputs) DecodeOutput {
	p, b, h := a.name()+".decode", x.Shape()[0], a.Heads
	dh, c, r := a.D/h, a.SeqLen, a.Latent.Down.Out
	q := a.Latent.Q.forward(x)                                                             // (B, D)
	latent := a.Latent.Down.forward(x)                                                     // (B, r)
	slot := node(p + ".latent_slot")(gorgonia.Reshape(latent, tensor.Shape{b, 1, r}))      // (B, 1, r)
	all := node(p + ".latents")(gorgonia.Concat(1, in.Latent, slot))                       // (B, C+1, r)
	flat := node(p + ".latents_flat")(gorgonia.Reshape(all, tensor.Shape{b * (c + 1), r})) // (B*(C+1), r)
	kv := a.Latent.Up.forward(flat)                                                        // (B*(C+1), 2D)
	kv5 := node(p + ".kv_5d")(gorgonia.Reshape(kv, tensor.Shape{b, c + 1, 2, h, dh}))      // (B, C+1, 2, H, d)
	heads := node(p + ".kv_heads")(gorgonia.Transpose(kv5, 2, 0, 3, 1, 4))                 // (2, B, H, C+1, d)
	keys := node(p + ".keys")(gorgonia.Slice(heads, gorgonia.S(0)))                        // (B, H, C+1, d)
	values := node(p + ".values")(gorgonia.Slice(heads, gorgonia.S(1)))                    // (B, H, C+1, d)
	qg := node(p + ".q_groups")(gorgonia.Reshape(q, tensor.Shape{b, h, 1, dh}))            // (B, H, 1, d)
	return DecodeOutput{Out: a.decodeAttend(p, qg, keys, values, in), Latent: latent}      // (B, D)
}

// decodeAttend is the attention of the new queries qg (B, G, g, d) over
// keys and values (B, G, C+1, d), merged and projected out (B, D).
func (a *MultiHeadSelfAttention) decodeAttend(p string, qg, keys, values *gorgonia.Node, in DecodeInputs) *gorgonia.Node {
	scores := node(p + ".scores")(gorgonia.BatchedMatMul(qg, keys, false, true))   // (B, G, g, C+1) = q k^T
	weights := a.decodeWeights(p, scores, in.Bias)                                 // (B, G, g, C+1)
	return a.merge(p, node(p+".context")(gorgonia.BatchedMatMul(weights, values))) // (B, D) from w v (B, G, g, d)
}

// merge is the heads y (B, G, g, d) side by side (B, D), head h = group
// h/g, member h%g, through the output projection (B, D).
func (a *MultiHeadSelfAttention) merge(p string, y *gorgonia.Node) *gorgonia.Node {
	merged := node(p + ".merged")(gorgonia.Reshape(y, tensor.Shape{y.Shape()[0], a.Heads * a.dHead()})) // (B, H*d)
	return a.Out.forward(merged)                                                                        // (B, D)
}

// headRange is heads [from, from+n) of parts (B, H+2G, d), as (B, n, d):
// Slice drops an axis of one, which the Reshape puts back.
func (a *MultiHeadSelfAttention) headRange(name string, parts *gorgonia.Node, from, n int) *gorgonia.Node {
	s := parts.Shape()
	part := node(name)(gorgonia.Slice(parts, nil, gorgonia.S(from, from+n)))       // (B, n, d); (B, d) for n = 1
	return node(name + "_3d")(gorgonia.Reshape(part, tensor.Shape{s[0], n, s[2]})) // (B, n, d)
}

// appendSlot is cache (..., C, w) with the new entries x (any shape of
// (...) x w values) as slot C: (..., C+1, w).
func (a *MultiHeadSelfAttention) appendSlot(name string, cache, x *gorgonia.Node) *gorgonia.Node {
	s := cache.Shape()
	slot := append(tensor.Shape{}, s...)
	slot[len(slot)-2] = 1
	x = node(name + "_slot")(gorgonia.Reshape(x, slot))    // (..., 1, w)
	return node(name)(gorgonia.Concat(len(s)-2, cache, x)) // (..., C+1, w)
}

// decodeRotate turns x (B, n, d) by each row's rotary angles when the layer
// has rotary positions: x*cos + rotate_half(x)*sin, as rotate does for a
// sequence.
func (a *MultiHeadSelfAttention) decodeRotate(name string, x *gorgonia.Node, in DecodeInputs) *gorgonia.Node {
	if len(a.RotaryFreqs) == 0 {
		return x
	}
	s := x.Shape()
	b, n, dh := s[0], s[1], s[2]
	_, _, turn := rotaryConstants(x.Graph(), x.Dtype(), 1, dh, a.RotaryFreqs)
	flat := node(name + ".flat")(gorgonia.Reshape(x, tensor.Shape{b * n, dh}))                // (B*n, d)
	half := node(name + ".rotate_half")(gorgonia.Mul(flat, turn))                             // (B*n, d) = [-x2 | x1]
	half3 := node(name + ".rotate_half_rows")(gorgonia.Reshape(half, tensor.Shape{b, n, dh})) // (B, n, d)
	xc := node(name + ".cos")(gorgonia.BroadcastHadamardProd(x, in.Cos, nil, []byte{1}))      // (B, n, d)
	hs := node(name + ".sin")(gorgonia.BroadcastHadamardProd(half3, in.Sin, nil, []byte{1}))  // (B, n, d)
	return node(name + ".rotary")(gorgonia.Add(xc, hs))                                       // (B, n, d)
}

// checkDecode raises an error naming the shapes when x or an input does not
// fit the layer's decoding step.
func (a *MultiHeadSelfAttention) checkDecode(x *gorgonia.Node, in DecodeInputs) {
	s := x.Shape()
	if len(s) != 2 || s[1] != a.D {
		raise.If(errors.Errorf("attention decode: input shape %v, want (B, D) with D = %d", s, a.D))
	}
	b, c, h, dh := s[0], a.SeqLen, a.Heads, a.dHead()
	kv := a.kvHeads(h)
	type want struct {
		name  string
		n     *gorgonia.Node
		shape tensor.Shape
	}
	var wants []want
	if a.Path == Gorgonia || a.Latent != nil {
		wants = append(wants, want{"bias", in.Bias, tensor.Shape{b, kv, h / kv, c + 1}})
	} else {
		wants = append(wants, want{"spans", in.Spans, tensor.Shape{2 * b}})
	}
	if a.Latent != nil {
		wants = append(wants, want{"latent cache", in.Latent, tensor.Shape{b, c, a.Latent.Down.Out}})
	} else {
		cache := tensor.Shape{b, kv, c, dh}
		if a.Path != Gorgonia {
			cache = tensor.Shape{b, kv, dh, c}
		}
		wants = append(wants, want{"key cache", in.Keys, cache}, want{"value cache", in.Values, cache})
	}
	if len(a.RotaryFreqs) > 0 {
		wants = append(wants, want{"rotary cos", in.Cos, tensor.Shape{b, dh}}, want{"rotary sin", in.Sin, tensor.Shape{b, dh}})
	}
	for _, w := range wants {
		if w.n == nil {
			raise.If(errors.Errorf("attention decode: no %s input", w.name))
		}
		if !w.n.Shape().Eq(w.shape) {
			raise.If(errors.Errorf("attention decode: %s shape %v, want %v", w.name, w.n.Shape(), w.shape))
		}
	}
}

// Decode is Forward for one decoding step of the block: x (B, D), one new
// position per sequence, through the attention's Decode (no dropout: a
// decoding step is inference).
func (bl *Block) Decode(x *gorgonia.Node, in DecodeInputs) (built DecodeOutput, err error) {
	defer raise.Catch(&err)
	var attn DecodeOutput
	attn.Out = bl.around(x, func(h *gorgonia.Node) *gorgonia.Node { // (B, D)
		attn = bl.Attn.decode(h, in)
		return attn.Out
	})
	return attn, nil
}
