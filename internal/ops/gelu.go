package ops

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// geluC is sqrt(2/pi) of the tanh form of GELU.
var geluC = math.Sqrt(2 / math.Pi)

// GELU applies 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) element-wise
// to a matrix (the tanh approximation GPT-2 uses, PyTorch's
// approximate="tanh").
func GELU(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, errors.Errorf("gelu: input shape %v, want a matrix", x.Shape())
	}
	return apply(geluDef{}, x) // same shape as x
}

// geluDef is GELU, or when backward its gradient (x, dy) -> dy * GELU'(x).
type geluDef struct{ backward bool }

func (d geluDef) String() string {
	if d.backward {
		return "GELUGrad{tanh}"
	}
	return "GELU{tanh}"
}

func (d geluDef) signature() signature {
	if d.backward {
		return signature{in: []input{floatIn(2, false), floatIn(2, false)}, out: 2}
	}
	return signature{in: []input{floatIn(2, true)}, out: 2}
}

func (geluDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same("gelu", s...) }

func (d geluDef) run(a *args) error { return byDtype(d, a, geluRun[float64], geluRun[float32]) }

// geluCost is kernels.ParallelFor's work per element of the float32
// kernels, in multiply-adds: about 25 flops with the exp.
const geluCost = 25

// geluRun: float32 through the vector kernels over the cores, float64 by
// the definition.
func geluRun[T float](d geluDef, a *args) {
	x, y := data[T](a, 0), out[T](a)
	var dy []T
	if d.backward {
		dy = data[T](a, 1)
	}
	if x32, ok := any(x).([]float32); ok {
		y32, dy32 := any(y).([]float32), any(dy).([]float32)
		kernels.ParallelFor(len(x32), geluCost, func(lo, hi int) {
			if d.backward {
				kernels.GELUGrad(x32[lo:hi], dy32[lo:hi], y32[lo:hi])
			} else {
				kernels.GELU(x32[lo:hi], y32[lo:hi])
			}
		})
		return
	}
	x64, y64 := any(x).([]float64), any(y).([]float64)
	if d.backward {
		geluGrad(x64, any(dy).([]float64), y64)
	} else {
		gelu(x64, y64)
	}
}

// gelu and geluGrad are the float64 definitions (and the reference the
// float32 kernels are tested against).
func gelu(x, y []float64) {
	for i, v := range x {
		y[i] = 0.5 * v * (1 + math.Tanh(geluC*(v+0.044715*v*v*v)))
	}
}

func geluGrad(x, dy, dx []float64) {
	for i, v := range x {
		t := math.Tanh(geluC * (v + 0.044715*v*v*v))
		d := 0.5*(1+t) + 0.5*v*(1-t*t)*geluC*(1+3*0.044715*v*v)
		dx[i] = dy[i] * d
	}
}

func (d geluDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.backward {
		return nil, errors.New("no second derivative")
	}
	dx, err := apply(geluDef{backward: true}, in[0], dy) // same shape as x
	return gorgonia.Nodes{dx}, err
}
