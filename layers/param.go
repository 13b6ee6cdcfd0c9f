package layers

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewParam adds an input node called name bound to value by reference: the
// graph reads value's backing array on every run, so changing value in place
// changes the next run. name must be unique in g (see the package doc).
func NewParam(g *gorgonia.ExprGraph, name string, value *tensor.Dense) *gorgonia.Node {
	return gorgonia.NewTensor(g, value.Dtype(), value.Dims(),
		gorgonia.WithShape(value.Shape().Clone()...), gorgonia.WithName(name), gorgonia.WithValue(value))
}
