package layers

import (
	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Add returns a + b for two float tensors of the same shape (a residual
// connection, token plus position embedding). It is gorgonia.Add without the
// fresh output tensor on every run: the sum goes into a buffer the node
// reuses, and the gradient passes through to both inputs unchanged.
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, errors.Errorf("add: shapes %v and %v differ", a.Shape(), b.Shape())
	}
	return gorgonia.ApplyOp(addOp{opBase{"Add"}, a.Dims(), newBuffer()}, a, b)
}

type addOp struct {
	opBase
	dims int
	out  *buffer
}

func (op addOp) Arity() int { return 2 }

func (op addOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(op.dims), floatTensor(op.dims), floatTensor(op.dims))
}

func (op addOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(s[1]) {
		return nil, errors.Errorf("add: shapes %v and %v differ", s[0], s[1])
	}
	return s[0].Clone(), nil
}

func (op addOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	a, err := denseArg(inputs, 0, op.dims, "add")
	if err != nil {
		return nil, err
	}
	b, err := denseArg(inputs, 1, op.dims, "add")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("add", a, b); err != nil {
		return nil, err
	}
	if !a.Shape().Eq(b.Shape()) {
		return nil, errors.Errorf("add: shapes %v and %v differ", a.Shape(), b.Shape())
	}
	y := op.out.get(a.Dtype(), a.Shape()...)
	if a.Dtype() == tensor.Float64 {
		addTo(a.Float64s(), b.Float64s(), y.Float64s())
	} else {
		addTo(a.Float32s(), b.Float32s(), y.Float32s())
	}
	return y, nil
}

func addTo[T float](a, b, y []T) {
	b, y = b[:len(a)], y[:len(a)]
	for i, v := range a {
		y[i] = v + b[i]
	}
}

func (op addOp) DiffWRT(inputs int) []bool { return []bool{true, true} }

func (op addOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{grad, grad}, nil
}
