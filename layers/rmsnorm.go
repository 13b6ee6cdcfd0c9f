package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// RMSNorm scales each row of x (N, D) to unit root mean square, then by
// Weight, as Llama's RMSNorm and PyTorch's nn.RMSNorm(D, eps):
// y = x / sqrt(mean(x^2) + Eps) * (Offset + Weight). Unlike LayerNorm it
// neither centres the row nor adds a bias. Offset is 0 but for Gemma's
// RMSNorm, which scales by (1 + Weight).
type RMSNorm struct {
	D      int
	Eps    float64
	Offset float64        // added to Weight: 1 for Gemma's (1 + w), else 0
	Weight *gorgonia.Node // (D)
	Path   Path           // which ops Forward writes; "" is Fused
	// Tap reads and may replace the norm's scale (sqrt(mean(x^2) + Eps)
	// per row) and x divided by it ("normalized", before the weight), each
	// built on the Gorgonia path when wanted, or nil.
	Tap Tap
}

// NewRMSNorm checks that weight is a vector; Eps starts at LayerNormEps.
func NewRMSNorm(weight *gorgonia.Node) (*RMSNorm, error) {
	if weight == nil || weight.Dims() != 1 {
		return nil, errors.Errorf("rms norm: weight %v must be a vector", nodeShape(weight))
	}
	return &RMSNorm{D: weight.Shape()[0], Eps: LayerNormEps, Weight: weight}, nil
}

// Width is D.
func (l *RMSNorm) Width() int { return l.D }

// SetPath puts the RMSNorm on path p.
func (l *RMSNorm) SetPath(p Path) { l.Path = p }

// Forward normalises x (N, D) row by row.
func (l *RMSNorm) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return l.forward(x), nil
}

func (l *RMSNorm) forward(x *gorgonia.Node) *gorgonia.Node {
	checkRows("rms norm", l.Weight, x)
	p := prefixOf(l.Weight)
	if l.Path == Gorgonia || wants(l.Tap, p+".scale", p+".normalized") {
		return l.forwardGorgonia(x)
	}
	return node(prefixOf(l.Weight))(ops.RMSNorm(x, offsetWeight(l.Weight, l.Offset), l.Eps)) // (N, D)
}

// offsetWeight is a norm's scale w + offset (D), named like
// "blocks.0.ln1.scale", or w itself when offset is 0. A sum of D values,
// it is Gorgonia's Add on either path.
func offsetWeight(w *gorgonia.Node, offset float64) *gorgonia.Node {
	if offset == 0 {
		return w
	}
	return node(prefixOf(w) + ".scale")(gorgonia.Add(w, scalar(w.Graph(), w.Dtype(), offset))) // (D)
}
