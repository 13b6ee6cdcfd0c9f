package layers

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Linear is y = x W^T + b with W stored (out, in) as PyTorch's nn.Linear.
type Linear struct {
	In, Out int
	Weight  *gorgonia.Node // (Out, In)
	Bias    *gorgonia.Node // (Out) or nil
	Path    Path           // which ops Forward writes; "" is Fused
}

// NewLinear checks the weight is a matrix and the bias, when given, matches
// its rows.
func NewLinear(weight, bias *gorgonia.Node) (*Linear, error) {
	if weight == nil || weight.Dims() != 2 {
		return nil, errors.Errorf("linear weight %v: want a (out, in) matrix", nodeShape(weight))
	}
	out, in := weight.Shape()[0], weight.Shape()[1]
	if bias != nil && (bias.Dims() != 1 || bias.Shape()[0] != out) {
		return nil, errors.Errorf("linear %s: bias shape %v, want (%d)", weight.Name(), bias.Shape(), out)
	}
	return &Linear{In: in, Out: out, Weight: weight, Bias: bias}, nil
}

// Forward maps x (N, In) to (N, Out) with one fused GEMM (W is read
// transposed in place, never copied) plus the bias.
func (l *Linear) Forward(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[1] != l.In {
		return nil, errors.Errorf("linear %s: input shape %v, want (N, %d)", l.Weight.Name(), x.Shape(), l.In)
	}
	if l.Path == Gorgonia {
		return l.forwardGorgonia(x)
	}
	op := linearOp{opBase{fmt.Sprintf("Linear{bias=%t}", l.Bias != nil)}, l.Bias != nil, newBuffer()}
	if l.Bias != nil {
		return NameAs(prefixOf(l.Weight))(gorgonia.ApplyOp(op, x, l.Weight, l.Bias)) // (N, Out)
	}
	return NameAs(prefixOf(l.Weight))(gorgonia.ApplyOp(op, x, l.Weight)) // (N, Out)
}

func nodeShape(n *gorgonia.Node) tensor.Shape {
	if n == nil {
		return nil
	}
	return n.Shape()
}

// linearOp computes x W^T [+ b] for x (N, in), W (out, in), b (out).
type linearOp struct {
	opBase
	bias bool
	out  *buffer
}

func (op linearOp) Arity() int {
	if op.bias {
		return 3
	}
	return 2
}

func (op linearOp) Type() hm.Type {
	if op.bias {
		return hm.NewFnType(floatTensor(2), floatTensor(2), floatTensor(1), floatTensor(2))
	}
	return hm.NewFnType(floatTensor(2), floatTensor(2), floatTensor(2))
}

func (op linearOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, op.Arity())
	if err != nil {
		return nil, err
	}
	if len(s[0]) != 2 || len(s[1]) != 2 || s[0][1] != s[1][1] {
		return nil, errors.Errorf("linear: x %v and weight %v do not match", s[0], s[1])
	}
	if op.bias && (len(s[2]) != 1 || s[2][0] != s[1][0]) {
		return nil, errors.Errorf("linear: bias %v does not match weight %v", s[2], s[1])
	}
	return tensor.Shape{s[0][0], s[1][0]}, nil
}

func (op linearOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	x, err := denseArg(inputs, 0, 2, "linear")
	if err != nil {
		return nil, err
	}
	w, err := denseArg(inputs, 1, 2, "linear")
	if err != nil {
		return nil, err
	}
	args := []*tensor.Dense{x, w}
	if op.bias {
		b, err := denseArg(inputs, 2, 1, "linear")
		if err != nil {
			return nil, err
		}
		args = append(args, b)
	}
	if err := sameDtype("linear", args...); err != nil {
		return nil, err
	}
	n, in, out := x.Shape()[0], x.Shape()[1], w.Shape()[0]
	if w.Shape()[1] != in || (op.bias && args[2].Shape()[0] != out) {
		return nil, errors.Errorf("linear: x %v, weight %v do not match", x.Shape(), w.Shape())
	}
	y := op.out.get(x.Dtype(), n, out)
	if x.Dtype() == tensor.Float64 {
		linearKernel[float64](args, y, n, in, out)
	} else {
		linearKernel[float32](args, y, n, in, out)
	}
	return y, nil
}

func linearKernel[T float](args []*tensor.Dense, y *tensor.Dense, n, in, out int) {
	yd := y.Data().([]T)
	var beta T
	if len(args) == 3 {
		b := args[2].Data().([]T)
		for i := 0; i < n; i++ {
			copy(yd[i*out:(i+1)*out], b)
		}
		beta = 1
	}
	kernels.Gemm(false, true, n, out, in, args[0].Data().([]T), in, args[1].Data().([]T), in, beta, yd, out)
}

func (op linearOp) DiffWRT(inputs int) []bool {
	diff := make([]bool, inputs)
	for i := range diff {
		diff[i] = true
	}
	return diff
}

// SymDiff: dx = dy W, dW = dy^T x, db = column sums of dy.
func (op linearOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, w := inputs[0], inputs[1]
	dx, err := gorgonia.ApplyOp(newMatMulOp(false, false), grad, w) // (N, in)
	if err != nil {
		return nil, errors.Wrap(err, "linear dx")
	}
	dw, err := gorgonia.ApplyOp(newMatMulOp(true, false), grad, x) // (out, in)
	if err != nil {
		return nil, errors.Wrap(err, "linear dW")
	}
	grads := gorgonia.Nodes{dx, dw}
	if op.bias {
		db, err := gorgonia.ApplyOp(newColSumOp(), grad) // (out)
		if err != nil {
			return nil, errors.Wrap(err, "linear db")
		}
		grads = append(grads, db)
	}
	return grads, nil
}

// matMulOp is op(A) op(B) for matrices, op = transpose when the flag is set;
// the transposes are BLAS flags, never copies.
type matMulOp struct {
	opBase
	transA, transB bool
	out            *buffer
}

func newMatMulOp(transA, transB bool) matMulOp {
	return matMulOp{opBase{fmt.Sprintf("MatMul{%t,%t}", transA, transB)}, transA, transB, newBuffer()}
}

func (op matMulOp) Arity() int { return 2 }

func (op matMulOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(2), floatTensor(2), floatTensor(2))
}

// dims returns m, n, k of the product for shapes a and b.
func (op matMulOp) dims(a, b tensor.Shape) (m, n, k int, err error) {
	if len(a) != 2 || len(b) != 2 {
		return 0, 0, 0, errors.Errorf("matmul: shapes %v and %v are not both matrices", a, b)
	}
	m, k = a[0], a[1]
	if op.transA {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if op.transB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, errors.Errorf("matmul%s: shapes %v and %v do not match", op.desc, a, b)
	}
	return m, n, k, nil
}

func (op matMulOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	m, n, _, err := op.dims(s[0], s[1])
	if err != nil {
		return nil, err
	}
	return tensor.Shape{m, n}, nil
}

func (op matMulOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	a, err := denseArg(inputs, 0, 2, "matmul")
	if err != nil {
		return nil, err
	}
	b, err := denseArg(inputs, 1, 2, "matmul")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("matmul", a, b); err != nil {
		return nil, err
	}
	m, n, k, err := op.dims(a.Shape(), b.Shape())
	if err != nil {
		return nil, err
	}
	c := op.out.get(a.Dtype(), m, n)
	if a.Dtype() == tensor.Float64 {
		kernels.Gemm(op.transA, op.transB, m, n, k, a.Float64s(), a.Shape()[1], b.Float64s(), b.Shape()[1], 0, c.Float64s(), n)
	} else {
		kernels.Gemm(op.transA, op.transB, m, n, k, a.Float32s(), a.Shape()[1], b.Float32s(), b.Shape()[1], 0, c.Float32s(), n)
	}
	return c, nil
}

// colSumOp sums a matrix over its rows: (N, M) -> (M).
type colSumOp struct {
	opBase
	out *buffer
}

func newColSumOp() colSumOp { return colSumOp{opBase{"ColSum"}, newBuffer()} }

func (op colSumOp) Arity() int    { return 1 }
func (op colSumOp) Type() hm.Type { return hm.NewFnType(floatTensor(2), floatTensor(1)) }

func (op colSumOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 1)
	if err != nil {
		return nil, err
	}
	if len(s[0]) != 2 {
		return nil, errors.Errorf("colsum: shape %v is not a matrix", s[0])
	}
	return tensor.Shape{s[0][1]}, nil
}

func (op colSumOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	a, err := denseArg(inputs, 0, 2, "colsum")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("colsum", a); err != nil {
		return nil, err
	}
	c := op.out.zeroed(a.Dtype(), a.Shape()[1])
	if a.Dtype() == tensor.Float64 {
		colSum(a.Float64s(), c.Float64s())
	} else {
		colSum(a.Float32s(), c.Float32s())
	}
	return c, nil
}

func colSum[T float](a, c []T) {
	m := len(c)
	for i := 0; i < len(a); i += m {
		for j, v := range a[i : i+m] {
			c[j] += v
		}
	}
}
