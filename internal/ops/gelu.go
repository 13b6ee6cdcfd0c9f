package ops

import (
	"math"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/kernels"
)

// geluC is sqrt(2/pi) of the tanh form of GELU.
var geluC = math.Sqrt(2 / math.Pi)

// GELU applies 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) element-wise
// to a matrix (the tanh approximation GPT-2 uses, PyTorch's
// approximate="tanh"); float32 through the vector kernels (kernels.GELU).
func GELU(x *gorgonia.Node) (*gorgonia.Node, error) { return applyPointwise(&geluTanhFn, x) }

var geluTanhFn = pointwise{name: "GELU{tanh}", f: geluTanh, df: geluTanhGrad, f32: kernels.GELU, df32: kernels.GELUGrad}

// geluTanh and geluTanhGrad are the float64 definitions (and the reference
// the float32 kernels are tested against).
func geluTanh(x float64) float64 { return 0.5 * x * (1 + math.Tanh(geluC*(x+0.044715*x*x*x))) }

func geluTanhGrad(x float64) float64 {
	t := math.Tanh(geluC * (x + 0.044715*x*x*x))
	return 0.5*(1+t) + 0.5*x*(1-t*t)*geluC*(1+3*0.044715*x*x)
}
