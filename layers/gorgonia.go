package layers

// The Gorgonia path: every layer written with Gorgonia's own ops, so that
// Gorgonia derives every gradient. Read this file to learn how each layer is
// written in Gorgonia; the fused ops compute the same nodes faster.

import (
	"math"

	"github.com/pkg/errors"
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
func (l *Linear) forwardGorgonia(x *gorgonia.Node) (*gorgonia.Node, error) {
	p := prefixOf(l.Weight)
	wt, err := NameAs(p + ".weight_t")(gorgonia.Transpose(l.Weight)) // (In, Out)
	if err != nil {
		return nil, err
	}
	if l.Bias == nil {
		return NameAs(p)(gorgonia.Mul(x, wt)) // (N, Out)
	}
	xw, err := NameAs(p + ".xw")(gorgonia.Mul(x, wt)) // (N, Out)
	if err != nil {
		return nil, err
	}
	return NameAs(p)(gorgonia.BroadcastAdd(xw, l.Bias, nil, colwise)) // (N, Out)
}

// forwardGorgonia looks the ids up with ByIndices along axis 0 (its
// gradient adds duplicate ids' rows). ByIndices returns row 0 for an id
// outside the table instead of failing (TestUpstreamByIndicesOutOfRange), so
// callers validate ids first, as model.Graph.Feed does.
func (e *Embedding) forwardGorgonia(ids *gorgonia.Node) (*gorgonia.Node, error) {
	return NameAs(prefixOf(e.Table))(gorgonia.ByIndices(e.Table, ids, 0)) // (N, D)
}

// forwardGorgonia is y = (x - mean) / sqrt(var + eps) * w + b, row by row,
// with Sum, Square, Sqrt and broadcast arithmetic.
func (l *LayerNorm) forwardGorgonia(x *gorgonia.Node) (*gorgonia.Node, error) {
	p := prefixOf(l.Weight)
	g, dt := x.Graph(), x.Dtype()
	invD, eps := scalar(g, dt, 1/float64(l.D)), scalar(g, dt, l.Eps)
	sum, err := NameAs(p + ".sum")(gorgonia.Sum(x, 1)) // (N)
	if err != nil {
		return nil, err
	}
	mean, err := NameAs(p + ".mean")(gorgonia.Mul(sum, invD)) // (N)
	if err != nil {
		return nil, err
	}
	centered, err := NameAs(p + ".centered")(gorgonia.BroadcastSub(x, mean, nil, rowwise)) // (N, D)
	if err != nil {
		return nil, err
	}
	sq, err := NameAs(p + ".sq")(gorgonia.Square(centered)) // (N, D)
	if err != nil {
		return nil, err
	}
	sqSum, err := NameAs(p + ".sq_sum")(gorgonia.Sum(sq, 1)) // (N)
	if err != nil {
		return nil, err
	}
	variance, err := NameAs(p + ".var")(gorgonia.Mul(sqSum, invD)) // (N)
	if err != nil {
		return nil, err
	}
	varEps, err := NameAs(p + ".var_eps")(gorgonia.Add(variance, eps)) // (N)
	if err != nil {
		return nil, err
	}
	// Sqrt and a division, not InverseSqrt: its gradient is wrong (TestUpstreamInverseSqrtGradient).
	std, err := NameAs(p + ".std")(gorgonia.Sqrt(varEps)) // (N)
	if err != nil {
		return nil, err
	}
	normed, err := NameAs(p + ".normed")(gorgonia.BroadcastHadamardDiv(centered, std, nil, rowwise)) // (N, D)
	if err != nil {
		return nil, err
	}
	scaled, err := NameAs(p + ".scaled")(gorgonia.BroadcastHadamardProd(normed, l.Weight, nil, colwise)) // (N, D)
	if err != nil {
		return nil, err
	}
	return NameAs(p)(gorgonia.BroadcastAdd(scaled, l.Bias, nil, colwise)) // (N, D)
}

// geluGorgonia is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with
// Cube, Tanh and element-wise arithmetic; name names the output.
func geluGorgonia(x *gorgonia.Node, name string) (*gorgonia.Node, error) {
	g, dt := x.Graph(), x.Dtype()
	cube, err := NameAs(name + ".cube")(gorgonia.Cube(x)) // (N, F)
	if err != nil {
		return nil, err
	}
	cubic, err := NameAs(name + ".cubic")(gorgonia.Mul(cube, scalar(g, dt, 0.044715))) // (N, F)
	if err != nil {
		return nil, err
	}
	inner, err := NameAs(name + ".inner")(gorgonia.Add(x, cubic)) // (N, F)
	if err != nil {
		return nil, err
	}
	arg, err := NameAs(name + ".tanh_arg")(gorgonia.Mul(inner, scalar(g, dt, math.Sqrt(2/math.Pi)))) // (N, F)
	if err != nil {
		return nil, err
	}
	th, err := NameAs(name + ".tanh")(gorgonia.Tanh(arg)) // (N, F)
	if err != nil {
		return nil, err
	}
	onePlus, err := NameAs(name + ".one_plus")(gorgonia.Add(th, scalar(g, dt, 1))) // (N, F)
	if err != nil {
		return nil, err
	}
	gated, err := NameAs(name + ".gated")(gorgonia.HadamardProd(x, onePlus)) // (N, F)
	if err != nil {
		return nil, err
	}
	return NameAs(name)(gorgonia.Mul(gated, scalar(g, dt, 0.5))) // (N, F)
}

// forwardGorgonia is the attention of Forward on Gorgonia's own ops; p names
// its nodes ("blocks.0.attn").
func (a *MultiHeadSelfAttention) forwardGorgonia(p string, x, keyMask, dropMask *gorgonia.Node) (out, weights *gorgonia.Node, err error) {
	b, t, d, h := a.Batch, a.SeqLen, a.D, a.Heads
	dh := d / h
	qkv, err := a.QKV.Forward(x) // (B*T, 3D) = x W_qkv^T + b_qkv
	if err != nil {
		return nil, nil, err
	}
	qkv5, err := NameAs(p + ".qkv_5d")(gorgonia.Reshape(qkv, tensor.Shape{b, t, 3, h, dh})) // (B, T, 3, H, d)
	if err != nil {
		return nil, nil, err
	}
	heads, err := NameAs(p + ".heads")(gorgonia.Transpose(qkv5, 2, 0, 3, 1, 4)) // (3, B, H, T, d)
	if err != nil {
		return nil, nil, err
	}
	var qkvs [3]*gorgonia.Node
	for i, part := range []string{".q", ".k", ".v"} {
		if qkvs[i], err = NameAs(p + part)(gorgonia.Slice(heads, gorgonia.S(i))); err != nil { // (B, H, T, d)
			return nil, nil, err
		}
	}
	q, k, v := qkvs[0], qkvs[1], qkvs[2]
	scores, err := NameAs(p + ".scores")(gorgonia.BatchedMatMul(q, k, false, true)) // (B, H, T, T) = q k^T
	if err != nil {
		return nil, nil, err
	}
	// This package's op: Gorgonia's last-axis SoftMax is NaN on large rows (TestUpstreamSoftmaxLastAxisBug).
	if weights, err = NameAs(p + ".weights")(ops.MaskedSoftmax(scores, keyMask, a.Causal, 1/math.Sqrt(float64(dh)))); err != nil { // (B, H, T, T)
		return nil, nil, err
	}
	applied := weights
	if dropMask != nil {
		if applied, err = NameAs(p + ".dropped")(gorgonia.HadamardProd(weights, dropMask)); err != nil { // (B, H, T, T)
			return nil, nil, err
		}
	}
	y, err := NameAs(p + ".context")(gorgonia.BatchedMatMul(applied, v)) // (B, H, T, d) = w v
	if err != nil {
		return nil, nil, err
	}
	if y, err = a.ablate(p, y); err != nil { // (B, H, T, d)
		return nil, nil, err
	}
	if y, err = NameAs(p + ".context_bthd")(gorgonia.Transpose(y, 0, 2, 1, 3)); err != nil { // (B, T, H, d)
		return nil, nil, err
	}
	if y, err = NameAs(p + ".merged")(gorgonia.Reshape(y, tensor.Shape{b * t, d})); err != nil { // (B*T, D)
		return nil, nil, err
	}
	if out, err = a.Out.Forward(y); err != nil { // (B*T, D) = y W_out^T + b_out
		return nil, nil, errors.Wrap(err, p)
	}
	return out, weights, nil
}
