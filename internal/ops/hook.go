package ops

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Hook returns x through a caller's function, the graph's hook at the
// activation called name: each run copies x into the node's output and
// calls fn on that copy, which fn may read and overwrite in place (the ops
// downstream read what it leaves). fn sees the run's value only while it
// runs. The gradient passes through unchanged, as through the identity,
// whatever fn did.
func Hook(x *gorgonia.Node, name string, fn func(y *tensor.Dense) error) (*gorgonia.Node, error) {
	return apply(hookDef{name: name, rank: x.Dims(), fn: fn}, x) // x's shape
}

type hookDef struct {
	name string
	rank int
	fn   func(y *tensor.Dense) error
}

// String names the activation, so that hooks at two activations whose
// inputs hash alike stay two nodes.
func (d hookDef) String() string { return "Hook(" + d.name + ")" }

func (d hookDef) signature() signature {
	return signature{in: []input{floatIn(d.rank, true)}, out: d.rank}
}

func (hookDef) shape(s []tensor.Shape) (tensor.Shape, error) { return s[0].Clone(), nil }

func (d hookDef) run(a *args) error {
	if err := byDtype(d, a, copyInput[float64], copyInput[float32]); err != nil {
		return err
	}
	return d.fn(a.y)
}

func copyInput[T float](_ hookDef, a *args) { copy(out[T](a), data[T](a, 0)) }

func (hookDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	return gorgonia.Nodes{dy}, nil
}
