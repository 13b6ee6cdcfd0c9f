package ops

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// SwiGLU is silu(gate) * up element by element for gate and up (N, F),
// silu(z) = z sigmoid(z): the middle of Llama's MLP, one op so that the
// sigmoid is taken once per element and nothing in between is stored.
// Gradients: d gate = dy up silu'(gate) with silu'(z) = s + z s (1 - s),
// s = sigmoid(z); d up = dy silu(gate), the forward's kernel with dy for up.
func SwiGLU(gate, up *gorgonia.Node) (*gorgonia.Node, error) {
	if gate.Dims() != 2 {
		return nil, errors.Errorf("swiglu: gate shape %v, want a matrix", gate.Shape())
	}
	return apply(swigluDef{}, gate, up) // (N, F)
}

// swigluPart is what a swigluDef computes.
type swigluPart int

const (
	swigluForward  swigluPart = iota // (gate, up) -> silu(gate) up
	swigluGradGate                   // (gate, up, dy) -> dy up silu'(gate)
	swigluGradUp                     // (gate, dy) -> dy silu(gate)
)

type swigluDef struct{ part swigluPart }

func (d swigluDef) String() string {
	return [...]string{"SwiGLU", "SwiGLUGradGate", "SwiGLUGradUp"}[d.part]
}

func (d swigluDef) signature() signature {
	diff := d.part == swigluForward
	in := []input{floatIn(2, diff), floatIn(2, diff)}
	if d.part == swigluGradGate {
		in = append(in, floatIn(2, false))
	}
	return signature{in: in, out: 2}
}

func (swigluDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same("swiglu", s...) }

func (d swigluDef) run(a *args) error { return byDtype(d, a, swiglu[float64], swiglu[float32]) }

// swigluCost is kernels.ParallelFor's work per element, as GELU's.
const swigluCost = 25

// swiglu: float32 through the vector kernels over the cores, float64 by
// the definition. The forward and GradUp are one kernel: silu(gate) times
// up, or times dy.
func swiglu[T float](d swigluDef, a *args) {
	gate, u, y := data[T](a, 0), data[T](a, 1), out[T](a)
	var dy []T
	if d.part == swigluGradGate {
		dy = data[T](a, 2)
	}
	kernels.ParallelFor(len(gate), swigluCost, func(lo, hi int) {
		if d.part == swigluGradGate {
			siluMulGrad(gate[lo:hi], u[lo:hi], dy[lo:hi], y[lo:hi])
		} else {
			siluMul(gate[lo:hi], u[lo:hi], y[lo:hi])
		}
	})
}

// siluMul and siluMulGrad run the float32 kernels, or the float64
// definitions (the reference the kernels are tested against).
func siluMul[T float](gate, u, y []T) {
	if g32, ok := any(gate).([]float32); ok {
		kernels.SiLUMul(g32, any(u).([]float32), any(y).([]float32))
		return
	}
	for i, z := range any(gate).([]float64) {
		y[i] = T(z * sigmoid(z) * float64(u[i]))
	}
}

func siluMulGrad[T float](gate, u, dy, dg []T) {
	if g32, ok := any(gate).([]float32); ok {
		kernels.SiLUMulGrad(g32, any(u).([]float32), any(dy).([]float32), any(dg).([]float32))
		return
	}
	for i, z := range any(gate).([]float64) {
		s := sigmoid(z)
		dg[i] = T(float64(dy[i]) * float64(u[i]) * (s + z*s*(1-s)))
	}
}

// sigmoid is 1 / (1 + exp(-z)); exp overflowing to +Inf gives 0, as it should.
func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

func (d swigluDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.part != swigluForward {
		return nil, errors.New("no second derivative")
	}
	dGate, err := apply(swigluDef{part: swigluGradGate}, in[0], in[1], dy) // (N, F)
	if err != nil {
		return nil, err
	}
	dUp, err := apply(swigluDef{part: swigluGradUp}, in[0], dy) // (N, F)
	return gorgonia.Nodes{dGate, dUp}, err
}
