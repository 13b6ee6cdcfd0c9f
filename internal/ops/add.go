package ops

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Add returns a + b for two float tensors of the same shape (a residual
// connection, token plus position embedding). It is gorgonia.Add without the
// fresh output tensor on every run: the sum goes into a buffer the node
// reuses, and the gradient passes through to both inputs unchanged.
func Add(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if !a.Shape().Eq(b.Shape()) {
		return nil, errors.Errorf("add: shapes %v and %v differ", a.Shape(), b.Shape())
	}
	return apply(addDef{a.Dims()}, a, b) // same shape as a
}

type addDef struct{ rank int }

func (addDef) String() string { return "Add" }

func (d addDef) signature() signature {
	return signature{in: []input{floatIn(d.rank, true), floatIn(d.rank, true)}, out: d.rank}
}

func (addDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same("add", s...) }

func (d addDef) run(a *args) error { return byDtype(d, a, add[float64], add[float32]) }

func add[T float](_ addDef, a *args) {
	x, y, z := data[T](a, 0), data[T](a, 1), out[T](a)
	if x32, ok := any(x).([]float32); ok {
		kernels.AddTo(x32, any(y).([]float32), any(z).([]float32))
		return
	}
	y, z = y[:len(x)], z[:len(x)]
	for i, v := range x {
		z[i] = v + y[i]
	}
}

func (addDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{dy, dy}, nil
}
