package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// GeGLU is Gemma's feed-forward block: Down(gelu_tanh(Gate x) * Up x), with
// GPT-2's tanh GELU, Gate and Up (D -> F), Down (F -> D): SwiGLU with GELU
// in place of silu.
type GeGLU struct {
	Gate, Up, Down *Linear
	Path           Path // which ops the gating is written with; "" is Fused (the projections have their own)
	// Tap reads and may replace "<mlp>.pre" (Gate's output), "<mlp>.pre_linear" (Up's)
	// and "<mlp>.post" (the gated product), or nil.
	Tap Tap
}

// NewGeGLU checks gate and up map D to one F and down maps it back.
func NewGeGLU(gate, up, down *Linear) (*GeGLU, error) {
	if _, err := NewSwiGLU(gate, up, down); err != nil {
		return nil, errors.New("geglu: need gate and up (D -> F) and down (F -> D)")
	}
	return &GeGLU{Gate: gate, Up: up, Down: down}, nil
}

// Width is D, the width it maps from and back to.
func (s *GeGLU) Width() int { return s.Gate.In }

// SetPath puts the gating and the three projections on path p.
func (s *GeGLU) SetPath(p Path) { s.Path, s.Gate.Path, s.Up.Path, s.Down.Path = p, p, p, p }

// Forward maps x (N, D) to y = Down(gelu_tanh(Gate x) * Up x) (N, D). The
// product is one node, layer.geglu: ops.GeGLU on the fused path; the
// Gorgonia path's GELU (Cube, Tanh and arithmetic, layer.geglu.gelu) and
// HadamardProd on the Gorgonia path.
func (s *GeGLU) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return s.forward(x), nil
}

func (s *GeGLU) forward(x *gorgonia.Node) *gorgonia.Node {
	p := parentOf(prefixOf(s.Gate.Weight))
	gate := at(s.Tap, p+".pre", s.Gate.forward(x))    // (N, F)
	up := at(s.Tap, p+".pre_linear", s.Up.forward(x)) // (N, F)
	name := p + ".geglu"
	var h *gorgonia.Node
	if s.Path == Gorgonia {
		gelu := geluGorgonia(gate, name+".gelu")        // (N, F)
		h = node(name)(gorgonia.HadamardProd(gelu, up)) // (N, F)
	} else {
		h = node(name)(ops.GeGLU(gate, up)) // (N, F)
	}
	return s.Down.forward(at(s.Tap, p+".post", h)) // (N, D)
}
