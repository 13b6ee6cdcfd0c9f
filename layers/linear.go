package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// Linear is y = x W^T + b with W stored (out, in) as PyTorch's nn.Linear.
type Linear struct {
	In, Out int
	Weight  *gorgonia.Node // (Out, In)
	Bias    *gorgonia.Node // (Out) or nil
	Path    Path           // which ops Forward writes; "" is Fused
	// Name names the nodes Forward adds; "" takes the layer's name from
	// the weight's ("lm_head" from "lm_head.weight"). A weight shared with
	// another layer (a tied LM head reads tok_emb.weight) needs its own.
	Name string
	// Stored, when set, is the weight kept in its file's dtype, which the
	// fused path reads in place (ops.LinearStored) instead of Weight's
	// value: Weight is then a node of its shape that no op reads. The
	// Gorgonia path refuses it.
	Stored *ops.Stored
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

// Forward maps x (N, In) to y (N, Out): ops.Linear, one GEMM with W read
// transposed in place, on the fused path.
func (l *Linear) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return l.forward(x), nil
}

func (l *Linear) forward(x *gorgonia.Node) *gorgonia.Node {
	if x.Dims() != 2 || x.Shape()[1] != l.In {
		raise.If(errors.Errorf("linear %s: input shape %v, want (N, %d)", l.Weight.Name(), x.Shape(), l.In))
	}
	switch {
	case l.Path == Gorgonia && l.Stored != nil:
		raise.If(errors.Errorf("linear %s: the weight is kept in its file's %s; the gorgonia path reads float32 weights only", l.Weight.Name(), l.Stored.DType))
	case l.Path == Gorgonia:
		return l.forwardGorgonia(x)
	case l.Stored != nil:
		return node(l.name())(ops.LinearStored(x, l.Stored, l.Bias)) // (N, Out)
	}
	return node(l.name())(ops.Linear(x, l.Weight, l.Bias)) // (N, Out)
}

// name is the layer's node-name prefix: Name, or the weight's layer name.
func (l *Linear) name() string {
	if l.Name != "" {
		return l.Name
	}
	return prefixOf(l.Weight)
}

func nodeShape(n *gorgonia.Node) tensor.Shape {
	if n == nil {
		return nil
	}
	return n.Shape()
}
