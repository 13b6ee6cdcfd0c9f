package layers

// The Gorgonia path: every layer written with Gorgonia's own ops, so that
// Gorgonia derives every gradient. Read this file to learn how each layer is
// written in Gorgonia; the fused ops compute the same nodes faster.

import (
	"math"

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

// forwardGorgonia is y = x W^T + b as Mul by a transposed copy of W and a
// broadcast bias add.
func (l *Linear) forwardGorgonia(x *gorgonia.Node) *gorgonia.Node {
	p := prefixOf(l.Weight)
	wt := node(p + ".weight_t")(gorgonia.Transpose(l.Weight)) // (In, Out)
	if l.Bias == nil {
		return node(p)(gorgonia.Mul(x, wt)) // (N, Out)
	}
	xw := node(p + ".xw")(gorgonia.Mul(x, wt))                      // (N, Out)
	return node(p)(gorgonia.BroadcastAdd(xw, l.Bias, nil, colwise)) // (N, Out)
}

// forwardGorgonia looks the ids up with ByIndices along axis 0 (its
// gradient adds duplicate ids' rows). ByIndices returns row 0 for an id
// outside the table instead of failing (TestUpstreamByIndicesOutOfRange), so
// callers validate ids first, as model.Graph.Feed does.
func (e *Embedding) forwardGorgonia(ids *gorgonia.Node) *gorgonia.Node {
	return node(prefixOf(e.Table))(gorgonia.ByIndices(e.Table, ids, 0)) // (N, D)
}

// forwardGorgonia is y = (x - mean) / sqrt(var + eps) * w + b, row by row,
// with Sum, Square, Sqrt and broadcast arithmetic.
func (l *LayerNorm) forwardGorgonia(x *gorgonia.Node) *gorgonia.Node {
	p := prefixOf(l.Weight)
	g, dt := x.Graph(), x.Dtype()
	invD, eps := scalar(g, dt, 1/float64(l.D)), scalar(g, dt, l.Eps)
	mean := node(p + ".mean")(gorgonia.Mul(node(p+".sum")(gorgonia.Sum(x, 1)), invD))             // (N)
	centered := node(p + ".centered")(gorgonia.BroadcastSub(x, mean, nil, rowwise))               // (N, D)
	sq := node(p + ".sq")(gorgonia.Square(centered))                                              // (N, D)
	variance := node(p + ".var")(gorgonia.Mul(node(p+".sq_sum")(gorgonia.Sum(sq, 1)), invD))      // (N)
	varEps := node(p + ".var_eps")(gorgonia.Add(variance, eps))                                   // (N)
	std := node(p + ".std")(gorgonia.Sqrt(varEps))                                                // (N); not InverseSqrt, whose gradient is wrong (TestUpstreamInverseSqrtGradient)
	normed := node(p + ".normed")(gorgonia.BroadcastHadamardDiv(centered, std, nil, rowwise))     // (N, D)
	scaled := node(p + ".scaled")(gorgonia.BroadcastHadamardProd(normed, l.Weight, nil, colwise)) // (N, D)
	return node(p)(gorgonia.BroadcastAdd(scaled, l.Bias, nil, colwise))                           // (N, D)
}

// geluGorgonia is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with
// Cube, Tanh and element-wise arithmetic; name names the output.
func geluGorgonia(x *gorgonia.Node, name string) *gorgonia.Node {
	g, dt := x.Graph(), x.Dtype()
	cubic := node(name + ".cubic")(gorgonia.Mul(node(name+".cube")(gorgonia.Cube(x)), scalar(g, dt, 0.044715))) // (N, F) = 0.044715 x^3
	inner := node(name + ".inner")(gorgonia.Add(x, cubic))                                                      // (N, F)
	arg := node(name + ".tanh_arg")(gorgonia.Mul(inner, scalar(g, dt, math.Sqrt(2/math.Pi))))                   // (N, F)
	th := node(name + ".tanh")(gorgonia.Tanh(arg))                                                              // (N, F)
	onePlus := node(name + ".one_plus")(gorgonia.Add(th, scalar(g, dt, 1)))                                     // (N, F)
	gated := node(name + ".gated")(gorgonia.HadamardProd(x, onePlus))                                           // (N, F)
	return node(name)(gorgonia.Mul(gated, scalar(g, dt, 0.5)))                                                  // (N, F)
}

// forwardGorgonia is the attention of Forward on Gorgonia's own ops.
func (a *MultiHeadSelfAttention) forwardGorgonia(x *gorgonia.Node, in AttentionInputs) AttentionOutput {
	b, t, d, h := a.Batch, a.SeqLen, a.D, a.Heads
	p, dh := a.name(), d/h
	qkv := a.QKV.forward(x)                                                          // (B*T, 3D) = x W_qkv^T + b_qkv
	qkv5 := node(p + ".qkv_5d")(gorgonia.Reshape(qkv, tensor.Shape{b, t, 3, h, dh})) // (B, T, 3, H, d)
	heads := node(p + ".heads")(gorgonia.Transpose(qkv5, 2, 0, 3, 1, 4))             // (3, B, H, T, d)
	q := node(p + ".q")(gorgonia.Slice(heads, gorgonia.S(0)))                        // (B, H, T, d)
	k := node(p + ".k")(gorgonia.Slice(heads, gorgonia.S(1)))                        // (B, H, T, d)
	v := node(p + ".v")(gorgonia.Slice(heads, gorgonia.S(2)))                        // (B, H, T, d)
	scores := node(p + ".scores")(gorgonia.BatchedMatMul(q, k, false, true))         // (B, H, T, T) = q k^T
	// This package's op: Gorgonia's last-axis SoftMax is NaN on large rows (TestUpstreamSoftmaxLastAxisBug).
	weights := node(p + ".weights")(ops.MaskedSoftmax(scores, in.KeyMask, ops.Mask{Causal: !a.Bidirectional}, a.scale())) // (B, H, T, T)
	y := node(p + ".context")(gorgonia.BatchedMatMul(a.dropout(p, weights, in.Dropout), v))             // (B, H, T, d) = w v
	bthd := node(p + ".context_bthd")(gorgonia.Transpose(a.ablate(p, y, in), 0, 2, 1, 3))               // (B, T, H, d)
	merged := node(p + ".merged")(gorgonia.Reshape(bthd, tensor.Shape{b * t, d}))                       // (B*T, D)
	return AttentionOutput{Out: a.Out.forward(merged), Weights: weights, Heads: y}                      // (B*T, D) = merged W_out^T + b_out
}
