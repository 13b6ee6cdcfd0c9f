package ops

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Erf is erf(x) element by element on a matrix. Gorgonia has no erf, and
// the exact GELU cannot be written without it (layers'
// TestGorgoniaGELUNeedsErf), so the Gorgonia path's GELU is Gorgonia's
// arithmetic around this op. Gradient: 2/sqrt(pi) exp(-x^2) dy.
func Erf(x *gorgonia.Node) (*gorgonia.Node, error) { return applyPointwise(&erfFn, x) }

// GELUExact is 0.5 x (1 + erf(x / sqrt 2)) element by element on a matrix:
// the exact GELU, PyTorch's nn.GELU() (nanoGPT's), in one op. Gradient:
// Φ(x) + x φ(x) times dy, Φ and φ the standard normal's distribution and
// density.
func GELUExact(x *gorgonia.Node) (*gorgonia.Node, error) { return applyPointwise(&geluErfFn, x) }

// ReLU2 is relu(x)^2 element by element on a matrix (nanochat's MLP).
// Gradient: 2 relu(x) dy.
func ReLU2(x *gorgonia.Node) (*gorgonia.Node, error) { return applyPointwise(&relu2Fn, x) }

// pointwise is an element-wise function and its derivative in float64,
// and optionally float32 kernels of both over slices (y = f(x), dx = dy
// f'(x)). Without kernels float32 runs through the float64 functions, one
// rounding at the end, so each element is the float64 value rounded.
type pointwise struct {
	name  string
	f, df func(x float64) float64
	f32   func(x, y []float32)
	df32  func(x, dy, dx []float32)
}

var (
	erfFn = pointwise{name: "Erf", f: math.Erf, df: func(x float64) float64 {
		return 2 / math.Sqrt(math.Pi) * math.Exp(-x*x)
	}}
	geluErfFn = pointwise{name: "GELU{erf}", f: func(x float64) float64 {
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	}, df: func(x float64) float64 {
		return 0.5*(1+math.Erf(x/math.Sqrt2)) + x*math.Exp(-0.5*x*x)/math.Sqrt(2*math.Pi)
	}}
	relu2Fn = pointwise{name: "ReLU2", f: func(x float64) float64 {
		r := max(x, 0)
		return r * r
	}, df: func(x float64) float64 { return 2 * max(x, 0) }}
)

func applyPointwise(fn *pointwise, x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 {
		return nil, errors.Errorf("%s: input shape %v, want a matrix", fn.name, x.Shape())
	}
	return apply(pointwiseDef{fn: fn}, x) // same shape as x
}

// pointwiseDef is fn, or when backward its gradient (x, dy) -> dy fn'(x).
type pointwiseDef struct {
	fn       *pointwise
	backward bool
}

func (d pointwiseDef) String() string {
	if d.backward {
		return d.fn.name + "Grad"
	}
	return d.fn.name
}

func (d pointwiseDef) signature() signature {
	if d.backward {
		return signature{in: []input{floatIn(2, false), floatIn(2, false)}, out: 2}
	}
	return signature{in: []input{floatIn(2, true)}, out: 2}
}

func (d pointwiseDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same(d.fn.name, s...) }

func (d pointwiseDef) run(a *args) error {
	return byDtype(d, a, pointwiseRun[float64], pointwiseRun[float32])
}

// pointwiseCost is kernels.ParallelFor's work per element, in
// multiply-adds: about 25, the float32 kernels' exp or math.Erf.
const pointwiseCost = 25

func pointwiseRun[T float](d pointwiseDef, a *args) {
	x, y := data[T](a, 0), out[T](a)
	var dy []T
	if d.backward {
		dy = data[T](a, 1)
	}
	kernels.ParallelFor(len(x), pointwiseCost, func(lo, hi int) {
		if d.backward {
			derivative(d.fn, x[lo:hi], dy[lo:hi], y[lo:hi])
		} else {
			value(d.fn, x[lo:hi], y[lo:hi])
		}
	})
}

// value sets y = fn(x), derivative dx = dy fn'(x): by fn's float32 kernels
// when it has them, else element by element in float64.
func value[T float](fn *pointwise, x, y []T) {
	if x32, ok := any(x).([]float32); ok && fn.f32 != nil {
		fn.f32(x32, any(y).([]float32))
		return
	}
	for i, v := range x {
		y[i] = T(fn.f(float64(v)))
	}
}

func derivative[T float](fn *pointwise, x, dy, dx []T) {
	if x32, ok := any(x).([]float32); ok && fn.df32 != nil {
		fn.df32(x32, any(dy).([]float32), any(dx).([]float32))
		return
	}
	for i, v := range x {
		dx[i] = T(float64(dy[i]) * fn.df(float64(v)))
	}
}

func (d pointwiseDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.backward {
		return nil, errors.New("no second derivative")
	}
	dx, err := apply(pointwiseDef{fn: d.fn, backward: true}, in[0], dy) // same shape as x
	return gorgonia.Nodes{dx}, err
}
