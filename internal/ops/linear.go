package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Linear is x W^T [+ b] for x (N, in), W (out, in) and b (out) or nil: one
// GEMM with W read transposed in place, never copied, the bias its
// starting value. Gradients: dx = dy W, dW = dy^T x, db = column sums of dy.
func Linear(x, w, b *gorgonia.Node) (*gorgonia.Node, error) {
	if b == nil {
		return apply(linearDef{}, x, w) // (N, out)
	}
	return apply(linearDef{bias: true}, x, w, b) // (N, out)
}

type linearDef struct{ bias bool }

func (d linearDef) String() string { return fmt.Sprintf("Linear{bias=%t}", d.bias) }

func (d linearDef) signature() signature {
	in := []input{floatIn(2, true), floatIn(2, true)}
	if d.bias {
		in = append(in, floatIn(1, true))
	}
	return signature{in: in, out: 2}
}

func (d linearDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if s[0][1] != s[1][1] {
		return nil, errors.Errorf("linear: x %v and weight %v do not match", s[0], s[1])
	}
	if d.bias && s[2][0] != s[1][0] {
		return nil, errors.Errorf("linear: bias %v does not match weight %v", s[2], s[1])
	}
	return tensor.Shape{s[0][0], s[1][0]}, nil
}

func (d linearDef) run(a *args) error { return byDtype(d, a, linear[float64], linear[float32]) }

func linear[T float](d linearDef, a *args) {
	x, w, y := data[T](a, 0), data[T](a, 1), out[T](a)
	n, in, o := a.in[0].Shape()[0], a.in[0].Shape()[1], a.in[1].Shape()[0]
	var beta T
	if d.bias {
		b := data[T](a, 2)
		for i := 0; i < n; i++ {
			copy(y[i*o:(i+1)*o], b)
		}
		beta = 1
	}
	kernels.Gemm(false, true, n, o, in, x, in, w, in, beta, y, o)
}

func (d linearDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := apply(matMulDef{}, dy, in[1]) // (N, in)
	if err != nil {
		return nil, err
	}
	dw, err := apply(matMulDef{transA: true}, dy, in[0]) // (out, in)
	if err != nil {
		return nil, err
	}
	if !d.bias {
		return gorgonia.Nodes{dx, dw}, nil
	}
	db, err := apply(colSumDef{}, dy) // (out)
	return gorgonia.Nodes{dx, dw, db}, err
}

// matMulDef is op(A) op(B) for matrices, op = transpose when the flag is
// set; the transposes are BLAS flags, never copies.
type matMulDef struct{ transA, transB bool }

func (d matMulDef) String() string { return fmt.Sprintf("MatMul{%t,%t}", d.transA, d.transB) }

func (d matMulDef) signature() signature {
	return signature{in: []input{floatIn(2, false), floatIn(2, false)}, out: 2}
}

// dims returns m, n, k of the product for shapes a and b.
func (d matMulDef) dims(a, b tensor.Shape) (m, n, k int, err error) {
	m, k = a[0], a[1]
	if d.transA {
		m, k = k, m
	}
	kb, n := b[0], b[1]
	if d.transB {
		kb, n = n, kb
	}
	if k != kb {
		return 0, 0, 0, errors.Errorf("%v: shapes %v and %v do not match", d, a, b)
	}
	return m, n, k, nil
}

func (d matMulDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	m, n, _, err := d.dims(s[0], s[1])
	return tensor.Shape{m, n}, err
}

func (d matMulDef) run(a *args) error { return byDtype(d, a, matMul[float64], matMul[float32]) }

func matMul[T float](d matMulDef, a *args) {
	m, n, k, _ := d.dims(a.in[0].Shape(), a.in[1].Shape())
	kernels.Gemm(d.transA, d.transB, m, n, k, data[T](a, 0), a.in[0].Shape()[1], data[T](a, 1), a.in[1].Shape()[1], 0, out[T](a), n)
}

// colSumDef sums a matrix over its rows: (N, M) -> (M).
type colSumDef struct{}

func (colSumDef) String() string { return "ColSum" }

func (colSumDef) signature() signature { return signature{in: []input{floatIn(2, false)}, out: 1} }

func (colSumDef) shape(s []tensor.Shape) (tensor.Shape, error) { return tensor.Shape{s[0][1]}, nil }

func (d colSumDef) run(a *args) error { return byDtype(d, a, colSum[float64], colSum[float32]) }

func colSum[T float](_ colSumDef, a *args) {
	x, c := data[T](a, 0), out[T](a)
	clear(c)
	m := len(c)
	if m == 0 {
		return
	}
	for i := 0; i < len(x); i += m {
		kernels.Axpy(1, x[i:i+m], c) // the same sums in the same order, in vector lanes
	}
}
