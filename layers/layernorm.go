package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// LayerNormEps is PyTorch's nn.LayerNorm default, the epsilon NewLayerNorm
// and NewRMSNorm start with.
const LayerNormEps = 1e-5

// LayerNorm normalises each row of x (N, D) to zero mean and unit biased
// variance, then scales by Weight and shifts by Bias, as PyTorch's
// nn.LayerNorm(D): y = (x - mean) / sqrt(var + Eps) * Weight + Bias. A nil
// Bias is a LayerNorm without bias (nn.LayerNorm(D, bias=False)).
type LayerNorm struct {
	D      int
	Eps    float64
	Weight *gorgonia.Node // (D)
	Bias   *gorgonia.Node // (D) or nil
	Path   Path           // which ops Forward writes; "" is Fused
	// Tap reads and may replace the norm's scale (sqrt(var + Eps) per row,
	// built on the Gorgonia path when wanted) and its output ("normalized"),
	// or nil.
	Tap Tap
}

// NewLayerNorm checks that weight is a vector and bias, unless nil, one of
// the same length.
func NewLayerNorm(weight, bias *gorgonia.Node) (*LayerNorm, error) {
	if weight == nil || weight.Dims() != 1 || bias != nil && !weight.Shape().Eq(bias.Shape()) {
		return nil, errors.Errorf("layer norm: weight %v and bias %v must be equal-length vectors (or the bias nil)", nodeShape(weight), nodeShape(bias))
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
	checkRows("layer norm", l.Weight, x)
	p := prefixOf(l.Weight)
	if l.Path == Gorgonia || wants(l.Tap, p+".scale") {
		return at(l.Tap, p+".normalized", l.forwardGorgonia(x)) // (N, D)
	}
	return at(l.Tap, p+".normalized", node(p)(ops.LayerNorm(x, l.Weight, l.Bias, l.Eps))) // (N, D)
}

// checkRows raises unless x is (N, D) for a norm's weight (D).
func checkRows(what string, weight, x *gorgonia.Node) {
	if d := weight.Shape()[0]; x.Dims() != 2 || x.Shape()[1] != d {
		raise.If(errors.Errorf("%s %s: input shape %v, want (N, %d)", what, weight.Name(), x.Shape(), d))
	}
}
