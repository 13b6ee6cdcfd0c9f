package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// Gated is a gated feed-forward block: Down(act(Gate x) * Up x), Gate and
// Up (D -> F), Down (F -> D). Its activation is silu(z) = z sigmoid(z)
// (SwiGLU, Llama's) or GPT-2's tanh GELU (GeGLU, Gemma's).
type Gated struct {
	Gate, Up, Down *Linear
	GELU           bool // GeGLU's gelu_tanh instead of SwiGLU's silu
	Path           Path // which ops the gating is written with; "" is Fused (the projections have their own)
	// Tap reads and may replace "<mlp>.pre" (Gate's output), "<mlp>.pre_linear" (Up's)
	// and "<mlp>.post" (the gated product), or nil.
	Tap Tap
}

// NewSwiGLU checks gate and up map D to one F and down maps it back.
func NewSwiGLU(gate, up, down *Linear) (*Gated, error) { return newGated("swiglu", gate, up, down) }

// NewGeGLU is NewSwiGLU with GPT-2's tanh GELU in place of silu.
func NewGeGLU(gate, up, down *Linear) (*Gated, error) { return newGated("geglu", gate, up, down) }

func newGated(kind string, gate, up, down *Linear) (*Gated, error) {
	if gate == nil || up == nil || down == nil || gate.In != up.In || gate.Out != up.Out || down.In != gate.Out || down.Out != gate.In {
		return nil, errors.Errorf("%s: need gate and up (D -> F) and down (F -> D)", kind)
	}
	return &Gated{Gate: gate, Up: up, Down: down, GELU: kind == "geglu"}, nil
}

// Width is D, the width it maps from and back to.
func (s *Gated) Width() int { return s.Gate.In }

// SetPath puts the gating and the three projections on path p.
func (s *Gated) SetPath(p Path) { s.Path, s.Gate.Path, s.Up.Path, s.Down.Path = p, p, p, p }

// Forward maps x (N, D) to y = Down(act(Gate x) * Up x) (N, D). The product
// is one node, layer.swiglu or layer.geglu: ops.SwiGLU or ops.GeGLU on the
// fused path. On the Gorgonia path SwiGLU is Sigmoid and HadamardProd,
// whose Sigmoid is exactly 1 above 19 (float64) or 15 (float32) where the
// fused op keeps 1 - sigmoid's last bits (TestUpstreamSigmoidSaturates):
// the paths agree where the gate is below that; GeGLU is the GELU of
// Cube, Tanh and arithmetic (layer.geglu.gelu) and HadamardProd.
func (s *Gated) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return s.forward(x), nil
}

func (s *Gated) forward(x *gorgonia.Node) *gorgonia.Node {
	p := parentOf(prefixOf(s.Gate.Weight))
	gate := at(s.Tap, p+".pre", s.Gate.forward(x))                    // (N, F)
	up := at(s.Tap, p+".pre_linear", s.Up.forward(x))                 // (N, F)
	return s.Down.forward(at(s.Tap, p+".post", s.gated(p, gate, up))) // (N, D)
}

// gated is act(gate) * up (N, F), named after the MLP p.
func (s *Gated) gated(p string, gate, up *gorgonia.Node) *gorgonia.Node {
	switch {
	case s.GELU && s.Path == Gorgonia:
		name := p + ".geglu"
		return node(name)(gorgonia.HadamardProd(geluGorgonia(gate, name+".gelu"), up)) // (N, F)
	case s.GELU:
		return node(p + ".geglu")(ops.GeGLU(gate, up)) // (N, F)
	case s.Path == Gorgonia:
		name := p + ".swiglu"
		sig := node(name + ".sigmoid")(gorgonia.Sigmoid(gate))         // (N, F)
		silu := node(name + ".silu")(gorgonia.HadamardProd(gate, sig)) // (N, F)
		return node(name)(gorgonia.HadamardProd(silu, up))             // (N, F)
	}
	return node(p + ".swiglu")(ops.SwiGLU(gate, up)) // (N, F)
}
