package layers

// The Gorgonia path: every layer written with Gorgonia's own ops, so that
// Gorgonia derives every gradient. Read this file to learn how each layer is
// written in Gorgonia (the MLP's activations in activation.go, SwiGLU and GeGLU in
// gated.go); the fused ops compute the same nodes faster.

import (
	"fmt"
	"hash/fnv"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
)

// rowwise and colwise are BroadcastX patterns: a (N) vector spread along
// axis 1 of a (N, D) matrix (one value per row), or a (D) vector spread
// along axis 0 (one value per column).
var (
	rowwise = []byte{1}
	colwise = []byte{0}
)

// forwardGorgonia is y = x W^T + b as one product with W's transpose flag
// and a broadcast bias add. Mul has no transpose flags; BatchedMatMul has,
// and on 2-D operands it is a single product (no batch axes), so W is read
// transposed in place rather than copied by a Transpose every step, in the
// forward and in the gradient (TestUpstreamBatchedMatMul2D).
func (l *Linear) forwardGorgonia(x *gorgonia.Node) *gorgonia.Node {
	p := l.name()
	if l.Bias == nil {
		return node(p)(gorgonia.BatchedMatMul(x, l.Weight, false, true)) // (N, Out) = x W^T
	}
	xw := node(p + ".xw")(gorgonia.BatchedMatMul(x, l.Weight, false, true)) // (N, Out) = x W^T
	return node(p)(gorgonia.BroadcastAdd(xw, l.Bias, nil, colwise))         // (N, Out)
}

// forwardGorgonia looks the ids up with ByIndices along axis 0 (its
// gradient adds duplicate ids' rows). ByIndices returns row 0 for an id
// outside the table instead of failing (TestUpstreamByIndicesOutOfRange), so
// callers validate ids first, as model.Graph.Feed does.
func (e *Embedding) forwardGorgonia(ids *gorgonia.Node) *gorgonia.Node {
	return node(prefixOf(e.Table))(gorgonia.ByIndices(e.Table, ids, 0)) // (N, D)
}

// forwardGorgonia is y = (x - mean) / sqrt(var + eps) * w [+ b], row by
// row, with Sum, Square, Sqrt and broadcast arithmetic.
func (l *LayerNorm) forwardGorgonia(x *gorgonia.Node) *gorgonia.Node {
	p := prefixOf(l.Weight)
	invD := scalar(x.Graph(), x.Dtype(), 1/float64(l.D))
	mean := node(p + ".mean")(gorgonia.Mul(node(p+".sum")(gorgonia.Sum(x, 1)), invD))      // (N)
	centered := node(p + ".centered")(gorgonia.BroadcastSub(x, mean, nil, rowwise))        // (N, D)
	sq := node(p + ".sq")(gorgonia.Square(centered))                                       // (N, D)
	return scaleRows(p, centered, sq, l.Weight, l.Bias, "var", "std", l.Eps, l.Tap, false) // (N, D)
}

// forwardGorgonia is y = x / sqrt(mean(x^2) + eps) * (offset + w), row by
// row, with Square, Sum, Sqrt and broadcast arithmetic.
func (l *RMSNorm) forwardGorgonia(x *gorgonia.Node) *gorgonia.Node {
	p := prefixOf(l.Weight)
	sq := node(p + ".sq")(gorgonia.Square(x))                                                          // (N, D)
	return scaleRows(p, x, sq, offsetWeight(l.Weight, l.Offset), nil, "ms", "rms", l.Eps, l.Tap, true) // (N, D)
}

// scaleRows is what LayerNorm and RMSNorm share on the Gorgonia path:
// x / sqrt(mean(sq) + eps) * w [+ b] row by row, for sq = x^2, the mean of
// each row of sq named p.<stat> and its square root p.<root>. A nil b adds
// no bias. The root goes through tap as p.scale (TransformerLens's
// hook_scale), and with tapNormed the rows divided by it as p.normalized
// (an RMSNorm's hook_normalized, before the weight).
func scaleRows(p string, x, sq, w, b *gorgonia.Node, stat, root string, eps float64, tap Tap, tapNormed bool) *gorgonia.Node {
	g, dt := x.Graph(), x.Dtype()
	invD := scalar(g, dt, 1/float64(x.Shape()[1]))
	mean := node(p + "." + stat)(gorgonia.Mul(node(p+".sq_sum")(gorgonia.Sum(sq, 1)), invD)) // (N)
	meanEps := node(p + "." + stat + "_eps")(gorgonia.Add(mean, scalar(g, dt, eps)))         // (N)
	r := at(tap, p+".scale", node(p+"."+root)(gorgonia.Sqrt(meanEps)))                       // (N); not InverseSqrt, whose gradient is wrong (TestUpstreamInverseSqrtGradient)
	normed := node(p + ".normed")(gorgonia.BroadcastHadamardDiv(x, r, nil, rowwise))         // (N, D)
	if tapNormed {
		normed = at(tap, p+".normalized", normed) // (N, D)
	}
	if b == nil {
		return node(p)(gorgonia.BroadcastHadamardProd(normed, w, nil, colwise)) // (N, D)
	}
	scaled := node(p + ".scaled")(gorgonia.BroadcastHadamardProd(normed, w, nil, colwise)) // (N, D)
	return node(p)(gorgonia.BroadcastAdd(scaled, b, nil, colwise))                         // (N, D)
}

// forwardGorgonia is the attention of Forward on Gorgonia's own ops.
func (a *MultiHeadSelfAttention) forwardGorgonia(x *gorgonia.Node, in AttentionInputs) AttentionOutput {
	b, t, h := a.Batch, a.SeqLen, a.Heads
	p, dh := a.name(), a.dHead()
	qkv := a.normalizeWhole(p, a.project(p, x)) // (B*T, H*d + 2*G*d) = x W_qkv^T + b_qkv [, QK-norm with All]
	var weights, y *gorgonia.Node
	if kv := a.kvHeads(h); kv == h {
		qkv5 := node(p + ".qkv_5d")(gorgonia.Reshape(qkv, tensor.Shape{b, t, 3, h, dh}))       // (B, T, 3, H, d)
		heads := node(p + ".heads")(gorgonia.Transpose(qkv5, 2, 0, 3, 1, 4))                   // (3, B, H, T, d)
		q := at(a.Tap, p+".q", a.query(p, node(p+".q")(gorgonia.Slice(heads, gorgonia.S(0))))) // (B, H, T, d)
		k := at(a.Tap, p+".k", a.key(p, node(p+".k")(gorgonia.Slice(heads, gorgonia.S(1)))))   // (B, H, T, d)
		v := at(a.Tap, p+".v", node(p+".v")(gorgonia.Slice(heads, gorgonia.S(2))))             // (B, H, T, d)
		scores := node(p + ".scores")(gorgonia.BatchedMatMul(q, k, false, true))               // (B, H, T, T) = q k^T
		// This package's op: Gorgonia's last-axis SoftMax is NaN on large rows (TestUpstreamSoftmaxLastAxisBug).
		weights = a.weights(p, scores, in.KeyMask)                                             // (B, H, T, T)
		y = node(p + ".context")(gorgonia.BatchedMatMul(a.dropout(p, weights, in.Dropout), v)) // (B, H, T, d) = w v
	} else {
		weights, y = a.groupedGorgonia(p, qkv, kv, in)
	}
	y = at(a.Tap, p+".head_out", y)                                                    // (B, H, T, d)
	bthd := node(p + ".context_bthd")(gorgonia.Transpose(y, 0, 2, 1, 3))               // (B, T, H, d)
	merged := node(p + ".merged")(gorgonia.Reshape(bthd, tensor.Shape{b * t, h * dh})) // (B*T, H*d)
	return AttentionOutput{Out: a.output(p, y, merged), Weights: weights, Heads: y}    // (B*T, D) = merged W_out^T + b_out
}

// groupedGorgonia is grouped-query attention with G = kv key and value
// heads: the g = H/G query heads of a group are stacked as one (g*T, d)
// matrix per (batch, group), so each product reads its group's one k or v
// (B, G, T, d) and no key or value head is copied per query head.
func (a *MultiHeadSelfAttention) groupedGorgonia(p string, qkv *gorgonia.Node, kv int, in AttentionInputs) (weights, y *gorgonia.Node) {
	b, t, h := a.Batch, a.SeqLen, a.Heads
	dh, g := a.dHead(), h/kv
	heads4 := node(p + ".qkv_4d")(gorgonia.Reshape(qkv, tensor.Shape{b, t, h + 2*kv, dh}))       // (B, T, H+2G, d)
	heads := node(p + ".heads")(gorgonia.Transpose(heads4, 2, 0, 1, 3))                          // (H+2G, B, T, d)
	q := at(a.Tap, p+".q", a.query(p, node(p+".q")(gorgonia.Slice(heads, gorgonia.S(0, h)))))    // (H, B, T, d)
	k := at(a.Tap, p+".k", a.key(p, a.kvSlice(p+".k", heads, h, kv)))                            // (G, B, T, d)
	v := at(a.Tap, p+".v", a.kvSlice(p+".v", heads, h+kv, kv))                                   // (G, B, T, d)
	q5 := node(p + ".q_groups")(gorgonia.Reshape(q, tensor.Shape{kv, g, b, t, dh}))              // (G, g, B, T, d)
	qg := node(p + ".q_bg")(gorgonia.Transpose(q5, 2, 0, 1, 3, 4))                               // (B, G, g, T, d)
	qg = node(p + ".q_stacked")(gorgonia.Reshape(qg, tensor.Shape{b, kv, g * t, dh}))            // (B, G, g*T, d)
	kb := node(p + ".k_bg")(gorgonia.Transpose(k, 1, 0, 2, 3))                                   // (B, G, T, d)
	vb := node(p + ".v_bg")(gorgonia.Transpose(v, 1, 0, 2, 3))                                   // (B, G, T, d)
	stacked := node(p + ".scores_stacked")(gorgonia.BatchedMatMul(qg, kb, false, true))          // (B, G, g*T, T) = q k^T
	scores := node(p + ".scores")(gorgonia.Reshape(stacked, tensor.Shape{b, h, t, t}))           // (B, H, T, T)
	weights = a.weights(p, scores, in.KeyMask)                                                   // (B, H, T, T)
	applied := a.dropout(p, weights, in.Dropout)                                                 // (B, H, T, T)
	wg := node(p + ".weights_stacked")(gorgonia.Reshape(applied, tensor.Shape{b, kv, g * t, t})) // (B, G, g*T, T)
	yg := node(p + ".context_stacked")(gorgonia.BatchedMatMul(wg, vb))                           // (B, G, g*T, d) = w v
	return weights, node(p + ".context")(gorgonia.Reshape(yg, tensor.Shape{b, h, t, dh}))        // (B, H, T, d)
}

// kvSlice is heads[from:from+kv] (kv, B, T, d) of heads (H+2G, B, T, d);
// Slice drops a range of one, which multi-query attention puts back.
func (a *MultiHeadSelfAttention) kvSlice(name string, heads *gorgonia.Node, from, kv int) *gorgonia.Node {
	part := node(name)(gorgonia.Slice(heads, gorgonia.S(from, from+kv))) // (G, B, T, d); (B, T, d) for G = 1
	if kv > 1 {
		return part
	}
	s := heads.Shape()
	return node(name + "_1")(gorgonia.Reshape(part, tensor.Shape{1, s[1], s[2], s[3]})) // (1, B, T, d)
}

// rotate turns x (..., T, d) by rotary position embeddings when the layer
// has them: x*cos + rotate_half(x)*sin, with cos and sin constant (T, d)
// tables (RotaryTable) and rotate_half a fixed (d, d) matrix R, x R =
// [-x2 | x1 | 0] on the R rotated channels [x1 | x2] and none past them.
func (a *MultiHeadSelfAttention) rotate(name string, x *gorgonia.Node) *gorgonia.Node {
	if len(a.RotaryFreqs) == 0 {
		return x
	}
	s := x.Shape()
	t, dh := s[len(s)-2], s[len(s)-1]
	n := s.TotalSize() / (t * dh)
	cos, sin, turn := rotaryConstants(x.Graph(), x.Dtype(), t, dh, a.RotaryFreqs)
	x3 := node(name + ".rows")(gorgonia.Reshape(x, tensor.Shape{n, t, dh}))                   // (N, T, d)
	flat := node(name + ".flat")(gorgonia.Reshape(x, tensor.Shape{n * t, dh}))                // (N*T, d)
	half := node(name + ".rotate_half")(gorgonia.Mul(flat, turn))                             // (N*T, d) = [-x2 | x1]
	half3 := node(name + ".rotate_half_rows")(gorgonia.Reshape(half, tensor.Shape{n, t, dh})) // (N, T, d)
	xc := node(name + ".cos")(gorgonia.BroadcastHadamardProd(x3, cos, nil, []byte{0}))        // (N, T, d)
	hs := node(name + ".sin")(gorgonia.BroadcastHadamardProd(half3, sin, nil, []byte{0}))     // (N, T, d)
	turned := node(name + ".turned")(gorgonia.Add(xc, hs))                                    // (N, T, d)
	return node(name + ".rotary")(gorgonia.Reshape(turned, s))                                // (..., T, d)
}

// rotaryConstants are the named constant inputs of rotate: cos and sin
// (T, d) and the rotate-half matrix (d, d). Equal tables share one node.
func rotaryConstants(g *gorgonia.ExprGraph, dt tensor.Dtype, t, dh int, freqs []float64) (cos, sin, turn *gorgonia.Node) {
	c, s := ops.RotaryAngles(t, 0, freqs)
	half := len(freqs)
	r := make([]float64, dh*dh)
	for i := 0; i < half; i++ {
		r[(i+half)*dh+i] = -1 // (x R)[i] = -x[i+R/2]
		r[i*dh+i+half] = 1    // (x R)[i+R/2] = x[i]
	}
	tag := fmt.Sprintf("(T=%d,d=%d,freqs=%s)", t, dh, frequencyTag(freqs))
	cosT, sinT := RotaryTable(c, half, dh, 1), RotaryTable(s, half, dh, 0)
	return constant(g, dt, "rotary_cos"+tag, cosT, t, dh), constant(g, dt, "rotary_sin"+tag, sinT, t, dh), constant(g, dt, "rotate_half"+tag, r, dh, dh)
}

// RotaryTable spreads the values (T, half) of ops.RotaryAngles over a
// head's d channels (T, d): pair i's value at channels i and i+half, and
// rest on the channels past 2·half that rotary positions leave unturned
// (1 for cos, 0 for sin).
func RotaryTable(values []float64, half, dh int, rest float64) []float64 {
	t := len(values) / half
	table := make([]float64, t*dh)
	for p := 0; p < t; p++ {
		row := table[p*dh : (p+1)*dh]
		for i := range row {
			row[i] = rest
		}
		for i, v := range values[p*half : (p+1)*half] {
			row[i], row[i+half] = v, v
		}
	}
	return table
}

// frequencyTag tells sets of rotary frequencies apart in a constant's name:
// the first, the last and a hash of them all.
func frequencyTag(freqs []float64) string {
	h := fnv.New64a()
	for _, f := range freqs {
		fmt.Fprintf(h, "%v,", f)
	}
	return fmt.Sprintf("%d:%x", len(freqs), h.Sum64())
}
