package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// LayerNormEps is PyTorch's nn.LayerNorm default.
const LayerNormEps = 1e-5

// LayerNorm normalises each row of x (N, D) to zero mean and unit biased
// variance, then scales by Weight and shifts by Bias, as PyTorch's
// nn.LayerNorm(D): y = (x - mean) / sqrt(var + Eps) * Weight + Bias.
type LayerNorm struct {
	D      int
	Eps    float64
	Weight *gorgonia.Node // (D)
	Bias   *gorgonia.Node // (D)
	Path   Path           // which ops Forward writes; "" is Fused
}

// NewLayerNorm checks that weight and bias are vectors of the same length.
func NewLayerNorm(weight, bias *gorgonia.Node) (*LayerNorm, error) {
	if weight == nil || bias == nil || weight.Dims() != 1 || !weight.Shape().Eq(bias.Shape()) {
		return nil, errors.Errorf("layer norm: weight %v and bias %v must be equal-length vectors", nodeShape(weight), nodeShape(bias))
	}
	return &LayerNorm{D: weight.Shape()[0], Eps: LayerNormEps, Weight: weight, Bias: bias}, nil
}

// Width is D.
func (l *LayerNorm) Width() int { return l.D }

// Forward normalises x (N, D) row by row.
func (l *LayerNorm) Forward(x *gorgonia.Node) (y *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return l.forward(x), nil
}

func (l *LayerNorm) forward(x *gorgonia.Node) *gorgonia.Node {
	if x.Dims() != 2 || x.Shape()[1] != l.D {
		raise.If(errors.Errorf("layer norm %s: input shape %v, want (N, %d)", l.Weight.Name(), x.Shape(), l.D))
	}
	if l.Path == Gorgonia {
		return l.forwardGorgonia(x)
	}
	return node(prefixOf(l.Weight))(ops.LayerNorm(x, l.Weight, l.Bias, l.Eps)) // (N, D)
}
