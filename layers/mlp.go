package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// MLP is the transformer feed-forward block: FC (D -> F), GELU, Proj (F -> D).
type MLP struct {
	FC, Proj *Linear
	Path     Path // which ops the GELU is written with; "" is Fused (FC and Proj have their own)
}

// NewMLP checks the two projections chain back to the input width.
func NewMLP(fc, proj *Linear) (*MLP, error) {
	if fc == nil || proj == nil || fc.Out != proj.In || proj.Out != fc.In {
		return nil, errors.New("mlp: need fc (D -> F) and proj (F -> D)")
	}
	return &MLP{FC: fc, Proj: proj}, nil
}

// Width is D, the width it maps from and back to.
func (m *MLP) Width() int { return m.FC.In }

// Forward maps x (N, D) to y = Proj(GELU(FC(x))) (N, D), GELU in its tanh
// form.
func (m *MLP) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return m.forward(x), nil
}

func (m *MLP) forward(x *gorgonia.Node) *gorgonia.Node {
	h := m.FC.forward(x) // (N, F)
	gelu := parentOf(prefixOf(m.FC.Weight)) + ".gelu"
	if m.Path == Gorgonia {
		h = geluGorgonia(h, gelu) // (N, F)
	} else {
		h = node(gelu)(ops.GELU(h)) // (N, F)
	}
	return m.Proj.forward(h) // (N, D)
}
