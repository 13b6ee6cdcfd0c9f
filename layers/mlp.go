package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/raise"
)

// MLP is the transformer feed-forward block: FC (D -> F), the activation,
// Proj (F -> D).
type MLP struct {
	FC, Proj   *Linear
	Activation Activation // "" is GELUTanh
	Path       Path       // which ops the activation is written with; "" is Fused (FC and Proj have their own)
	Tap        Tap        // reads and may replace "<mlp>.pre" (FC's output) and "<mlp>.post" (the activation's), or nil
}

// NewMLP checks the two projections chain back to the input width and the
// activation is one an MLP applies.
func NewMLP(fc, proj *Linear, act Activation) (*MLP, error) {
	if fc == nil || proj == nil || fc.Out != proj.In || proj.Out != fc.In {
		return nil, errors.New("mlp: need fc (D -> F) and proj (F -> D)")
	}
	if err := act.check(); err != nil {
		return nil, err
	}
	return &MLP{FC: fc, Proj: proj, Activation: act}, nil
}

// Width is D, the width it maps from and back to.
func (m *MLP) Width() int { return m.FC.In }

// Forward maps x (N, D) to y = Proj(act(FC(x))) (N, D).
func (m *MLP) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return m.forward(x), nil
}

func (m *MLP) forward(x *gorgonia.Node) *gorgonia.Node {
	p := parentOf(prefixOf(m.FC.Weight))
	h := at(m.Tap, p+".pre", m.FC.forward(x))                  // (N, F)
	h = at(m.Tap, p+".post", m.Activation.apply(h, m.Path, p)) // (N, F)
	return m.Proj.forward(h)                                   // (N, D)
}
