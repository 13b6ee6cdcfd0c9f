package ops

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// GeGLU is gelu_tanh(gate) * up element by element for gate and up (N, F):
// the middle of Gemma's MLP (hidden_activation gelu_pytorch_tanh), one op as
// SwiGLU is. Gradients: d gate = dy up gelu'(gate), d up = dy gelu(gate),
// the forward with dy for up. Each element is computed in float64 (GELU's
// definition, geluTanh) and rounded once.
func GeGLU(gate, up *gorgonia.Node) (*gorgonia.Node, error) {
	if gate.Dims() != 2 {
		return nil, errors.Errorf("geglu: gate shape %v, want a matrix", gate.Shape())
	}
	return apply(gegluDef{}, gate, up) // (N, F)
}

// gegluDef is what SwiGLU's def is, with GELU's tanh form for silu; its
// parts are swigluPart's.
type gegluDef struct{ part swigluPart }

func (d gegluDef) String() string {
	return [...]string{"GeGLU", "GeGLUGradGate", "GeGLUGradUp"}[d.part]
}

func (d gegluDef) signature() signature { return swigluDef{part: d.part}.signature() }

func (gegluDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same("geglu", s...) }

func (d gegluDef) run(a *args) error { return byDtype(d, a, geglu[float64], geglu[float32]) }

// geglu: the forward and GradUp are one kernel, gelu(gate) times up, or
// times dy; GradGate is dy up gelu'(gate).
func geglu[T float](d gegluDef, a *args) {
	gate, u, y := data[T](a, 0), data[T](a, 1), out[T](a)
	var dy []T
	if d.part == swigluGradGate {
		dy = data[T](a, 2)
	}
	kernels.ParallelFor(len(gate), swigluCost, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			z := float64(gate[i])
			if d.part == swigluGradGate {
				y[i] = T(float64(dy[i]) * float64(u[i]) * geluTanhGrad(z))
			} else {
				y[i] = T(geluTanh(z) * float64(u[i]))
			}
		}
	})
}

func (d gegluDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.part != swigluForward {
		return nil, errors.New("no second derivative")
	}
	dGate, err := apply(gegluDef{part: swigluGradGate}, in[0], in[1], dy) // (N, F)
	if err != nil {
		return nil, err
	}
	dUp, err := apply(gegluDef{part: swigluGradUp}, in[0], dy) // (N, F)
	return gorgonia.Nodes{dGate, dUp}, err
}
