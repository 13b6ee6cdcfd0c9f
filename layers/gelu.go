package layers

import (
	"math"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// geluC is sqrt(2/pi) of the tanh form of GELU.
var geluC = math.Sqrt(2 / math.Pi)

// GELU applies 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) element-wise
// (the tanh approximation GPT-2 uses, PyTorch's approximate="tanh").
func GELU(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, errors.Errorf("gelu: input shape %v, want a matrix", x.Shape())
	}
	return gorgonia.ApplyOp(geluOp{opBase{"GELU{tanh}"}, newBuffer()}, x) // same shape as x
}

type geluOp struct {
	opBase
	out *buffer
}

func (op geluOp) Arity() int    { return 1 }
func (op geluOp) Type() hm.Type { return hm.NewFnType(floatTensor(2), floatTensor(2)) }

func (op geluOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 1)
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op geluOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	x, err := denseArg(inputs, 0, 2, "gelu")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("gelu", x); err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), x.Shape()...)
	if x.Dtype() == tensor.Float64 {
		gelu(x.Float64s(), y.Float64s())
	} else {
		xs, ys := x.Float32s(), y.Float32s()
		kernels.ParallelFor(len(xs), geluCost, func(lo, hi int) { kernels.GELU(xs[lo:hi], ys[lo:hi]) })
	}
	return y, nil
}

// geluCost is kernels.ParallelFor's work per element of the float32 kernels, in
// multiply-adds: about 25 flops with the exp.
const geluCost = 25

// gelu and geluGrad are the float64 definitions (and the reference the
// float32 kernels are tested against).
func gelu(x, y []float64) {
	for i, v := range x {
		y[i] = 0.5 * v * (1 + math.Tanh(geluC*(v+0.044715*v*v*v)))
	}
}

func (op geluOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op geluOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := gorgonia.ApplyOp(geluGradOp{opBase{"GELUGrad{tanh}"}, newBuffer()}, inputs[0], grad) // same shape as x
	if err != nil {
		return nil, errors.Wrap(err, "gelu gradient")
	}
	return gorgonia.Nodes{dx}, nil
}

// geluGradOp maps (x, dy) to dy * GELU'(x).
type geluGradOp struct {
	opBase
	out *buffer
}

func (op geluGradOp) Arity() int { return 2 }

func (op geluGradOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(2), floatTensor(2), floatTensor(2))
}

func (op geluGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op geluGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	x, err := denseArg(inputs, 0, 2, "gelu gradient")
	if err != nil {
		return nil, err
	}
	dy, err := denseArg(inputs, 1, 2, "gelu gradient")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("gelu gradient", x, dy); err != nil {
		return nil, err
	}
	if !x.Shape().Eq(dy.Shape()) {
		return nil, errors.Errorf("gelu gradient: x %v and dy %v differ", x.Shape(), dy.Shape())
	}
	dx := op.out.get(x.Dtype(), x.Shape()...)
	if x.Dtype() == tensor.Float64 {
		geluGrad(x.Float64s(), dy.Float64s(), dx.Float64s())
	} else {
		xs, dys, dxs := x.Float32s(), dy.Float32s(), dx.Float32s()
		kernels.ParallelFor(len(xs), geluCost, func(lo, hi int) { kernels.GELUGrad(xs[lo:hi], dys[lo:hi], dxs[lo:hi]) })
	}
	return dx, nil
}

func geluGrad(x, dy, dx []float64) {
	for i, v := range x {
		t := math.Tanh(geluC * (v + 0.044715*v*v*v))
		d := 0.5*(1+t) + 0.5*v*(1-t*t)*geluC*(1+3*0.044715*v*v)
		dx[i] = dy[i] * d
	}
}
