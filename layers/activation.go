package layers

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
)

// Activation is an MLP's element-wise non-linearity. Its values are
// model.activation's names; the zero Activation is GELUTanh. SwiGLU, whose
// non-linearity gates a second projection, is a layer of its own.
type Activation string

const (
	GELUTanh Activation = "gelu_tanh" // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's
	GELU     Activation = "gelu"      // 0.5 x (1 + erf(x / sqrt 2)), exact: PyTorch's nn.GELU(), nanoGPT's
	ReLU2    Activation = "relu2"     // relu(x)^2, nanochat's
)

// check reports an Activation an MLP cannot apply.
func (act Activation) check() error {
	switch act {
	case "", GELUTanh, GELU, ReLU2:
		return nil
	}
	return errors.Errorf("mlp: activation %q: want %s, %s or %s (SwiGLU is a layer of its own)", string(act), GELUTanh, GELU, ReLU2)
}

// apply adds act of h (N, F) on path p, its output named layer.gelu (both
// GELUs) or layer.relu2: one internal/ops op on the fused path, Gorgonia's
// arithmetic on the Gorgonia path.
func (act Activation) apply(h *gorgonia.Node, p Path, layer string) *gorgonia.Node {
	switch {
	case act == ReLU2 && p == Gorgonia:
		return relu2Gorgonia(h, layer+".relu2")
	case act == ReLU2:
		return node(layer + ".relu2")(ops.ReLU2(h)) // (N, F)
	case act == GELU && p == Gorgonia:
		return geluErfGorgonia(h, layer+".gelu")
	case act == GELU:
		return node(layer + ".gelu")(ops.GELUExact(h)) // (N, F)
	case p == Gorgonia:
		return geluGorgonia(h, layer+".gelu")
	}
	return node(layer + ".gelu")(ops.GELU(h)) // (N, F)
}

// geluGorgonia is 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) with
// Cube, Tanh and element-wise arithmetic; name names the output.
func geluGorgonia(x *gorgonia.Node, name string) *gorgonia.Node {
	g, dt := x.Graph(), x.Dtype()
	cubic := node(name + ".cubic")(gorgonia.Mul(node(name+".cube")(gorgonia.Cube(x)), scalar(g, dt, 0.044715))) // (N, F) = 0.044715 x^3
	inner := node(name + ".inner")(gorgonia.Add(x, cubic))                                                      // (N, F)
	arg := node(name + ".tanh_arg")(gorgonia.Mul(inner, scalar(g, dt, math.Sqrt(2/math.Pi))))                   // (N, F)
	th := node(name + ".tanh")(gorgonia.Tanh(arg))                                                              // (N, F)
	return halfTimesOnePlus(x, th, name)                                                                        // (N, F)
}

// geluErfGorgonia is 0.5 x (1 + erf(x / sqrt 2)) with element-wise
// arithmetic around ops.Erf: Gorgonia has no erf (TestGorgoniaGELUNeedsErf).
func geluErfGorgonia(x *gorgonia.Node, name string) *gorgonia.Node {
	scaled := node(name + ".erf_arg")(gorgonia.Mul(x, scalar(x.Graph(), x.Dtype(), 1/math.Sqrt2))) // (N, F) = x / sqrt 2
	erf := node(name + ".erf")(ops.Erf(scaled))                                                    // (N, F)
	return halfTimesOnePlus(x, erf, name)                                                          // (N, F)
}

// halfTimesOnePlus is both GELUs' last steps, 0.5 x (1 + t), named name.
func halfTimesOnePlus(x, t *gorgonia.Node, name string) *gorgonia.Node {
	g, dt := x.Graph(), x.Dtype()
	onePlus := node(name + ".one_plus")(gorgonia.Add(t, scalar(g, dt, 1))) // (N, F)
	gated := node(name + ".gated")(gorgonia.HadamardProd(x, onePlus))      // (N, F)
	return node(name)(gorgonia.Mul(gated, scalar(g, dt, 0.5)))             // (N, F)
}

// relu2Gorgonia is relu(x)^2: Rectify's x · [x >= 0], with a named zero
// (Rectify's own is an unnamed constant), then Square.
func relu2Gorgonia(x *gorgonia.Node, name string) *gorgonia.Node {
	kept := node(name + ".kept")(gorgonia.Gte(x, scalar(x.Graph(), x.Dtype(), 0), true)) // (N, F): 1 where x >= 0, else 0
	relu := node(name + ".relu")(gorgonia.HadamardProd(x, kept))                         // (N, F)
	return node(name)(gorgonia.Square(relu))                                             // (N, F)
}
