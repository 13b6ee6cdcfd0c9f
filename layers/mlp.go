package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
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

// Forward maps x (N, D) to (N, D).
func (m *MLP) Forward(x *gorgonia.Node) (*gorgonia.Node, error) {
	h, err := m.FC.Forward(x) // (N, F)
	if err != nil {
		return nil, err
	}
	gelu := parentOf(prefixOf(m.FC.Weight)) + ".gelu"
	if m.Path == Gorgonia {
		h, err = geluGorgonia(h, gelu) // (N, F)
	} else {
		h, err = NameAs(gelu)(ops.GELU(h)) // (N, F)
	}
	if err != nil {
		return nil, err
	}
	return m.Proj.Forward(h) // (N, D)
}
