package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// SwiGLU is Llama's feed-forward block: Down(silu(Gate x) * Up x) with
// silu(z) = z sigmoid(z), Gate and Up (D -> F), Down (F -> D).
type SwiGLU struct {
	Gate, Up, Down *Linear
	Path           Path // which ops the gating is written with; "" is Fused (the projections have their own)
	// Tap reads and may replace "<mlp>.pre" (Gate's output), "<mlp>.pre_linear" (Up's)
	// and "<mlp>.post" (the gated product), or nil.
	Tap Tap
}

// NewSwiGLU checks gate and up map D to one F and down maps it back.
func NewSwiGLU(gate, up, down *Linear) (*SwiGLU, error) {
	if gate == nil || up == nil || down == nil || gate.In != up.In || gate.Out != up.Out || down.In != gate.Out || down.Out != gate.In {
		return nil, errors.New("swiglu: need gate and up (D -> F) and down (F -> D)")
	}
	return &SwiGLU{Gate: gate, Up: up, Down: down}, nil
}

// Width is D, the width it maps from and back to.
func (s *SwiGLU) Width() int { return s.Gate.In }

// SetPath puts the gating and the three projections on path p.
func (s *SwiGLU) SetPath(p Path) { s.Path, s.Gate.Path, s.Up.Path, s.Down.Path = p, p, p, p }

// Forward maps x (N, D) to y = Down(silu(Gate x) * Up x) (N, D). The
// product is one node, layer.swiglu: ops.SwiGLU on the fused path;
// Sigmoid and HadamardProd on the Gorgonia path, whose Sigmoid is exactly
// 1 above 19 (float64) or 15 (float32) where the fused op keeps
// 1 - sigmoid's last bits (TestUpstreamSigmoidSaturates): the paths agree
// where the gate is below that.
func (s *SwiGLU) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return s.forward(x), nil
}

func (s *SwiGLU) forward(x *gorgonia.Node) *gorgonia.Node {
	p := parentOf(prefixOf(s.Gate.Weight))
	gate := at(s.Tap, p+".pre", s.Gate.forward(x))    // (N, F)
	up := at(s.Tap, p+".pre_linear", s.Up.forward(x)) // (N, F)
	name := p + ".swiglu"
	var h *gorgonia.Node
	if s.Path == Gorgonia {
		sig := node(name + ".sigmoid")(gorgonia.Sigmoid(gate))         // (N, F)
		silu := node(name + ".silu")(gorgonia.HadamardProd(gate, sig)) // (N, F)
		h = node(name)(gorgonia.HadamardProd(silu, up))                // (N, F)
	} else {
		h = node(name)(ops.SwiGLU(gate, up)) // (N, F)
	}
	return s.Down.forward(at(s.Tap, p+".post", h)) // (N, D)
}
