package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// activationCase builds one MLP activation op on inputs drawn from rng in
// dtype dt: it returns the output and the inputs to differentiate.
type activationCase struct {
	name  string
	build func(p func(name string, v *tensor.Dense) *gorgonia.Node, in func() *tensor.Dense) (*gorgonia.Node, gorgonia.Nodes, error)
}

var activationCases = []activationCase{
	{"Erf", unary(Erf)},
	{"GELUExact", unary(GELUExact)},
	{"ReLU2", unary(ReLU2)},
	{"SwiGLU", func(p func(string, *tensor.Dense) *gorgonia.Node, in func() *tensor.Dense) (*gorgonia.Node, gorgonia.Nodes, error) {
		gate, up := p("gate", in()), p("up", in())
		y, err := SwiGLU(gate, up)
		return y, gorgonia.Nodes{gate, up}, err
	}},
}

func unary(op func(*gorgonia.Node) (*gorgonia.Node, error)) func(func(string, *tensor.Dense) *gorgonia.Node, func() *tensor.Dense) (*gorgonia.Node, gorgonia.Nodes, error) {
	return func(p func(string, *tensor.Dense) *gorgonia.Node, in func() *tensor.Dense) (*gorgonia.Node, gorgonia.Nodes, error) {
		x := p("x", in())
		y, err := op(x)
		return y, gorgonia.Nodes{x}, err
	}
}

// TestActivationGradientsMatchFiniteDifferences: each activation op's
// gradients against central differences in float64, as
// TestGradientsMatchFiniteDifferences, on inputs N(0, 1.5^2).
func TestActivationGradientsMatchFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, c := range activationCases {
		t.Run(c.name, func(t *testing.T) {
			checkGradients(t, rng, func(_ *gorgonia.ExprGraph, p func(string, *tensor.Dense) *gorgonia.Node) (*gorgonia.Node, gorgonia.Nodes, error) {
				return c.build(p, func() *tensor.Dense { return graphtest.RandDense(rng, 1.5, 3, 5) })
			})
		})
	}
}

// TestActivationsMatchLibm: in float64, Erf, GELUExact and SwiGLU (up = 1)
// against the values of Python 3's math module, whose erf and exp are C
// libm's, not Go's: erf(x), 0.5 x (1 + erf(x / sqrt 2)) and x / (1 +
// exp(-x)), within 1e-15 absolute; ReLU2 exactly.
func TestActivationsMatchLibm(t *testing.T) {
	x := []float64{-3, -1, -0.5, 0, 0.5, 1, 3}
	want := map[string][]float64{
		"Erf": {-0.9999779095030014, -0.8427007929497149, -0.5204998778130465, 0, 0.5204998778130465,
			0.8427007929497149, 0.9999779095030014},
		"GELUExact": {-0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0, 0.34573123063700656,
			0.8413447460685429, 2.99595030590511},
		"ReLU2":  {0, 0, 0, 0, 0.25, 1, 9},
		"SwiGLU": {-0.14227761953270035, -0.2689414213699951, -0.1887703343990727, 0, 0.3112296656009273, 0.7310585786300049, 2.8577223804672998},
	}
	for _, c := range activationCases {
		g := gorgonia.NewGraph()
		inputs := [][]float64{x, {1, 1, 1, 1, 1, 1, 1}}
		in := func() *tensor.Dense {
			v := inputs[0]
			inputs = inputs[1:]
			return tensor.New(tensor.WithShape(1, len(v)), tensor.WithBacking(append([]float64(nil), v...)))
		}
		y, _, err := c.build(func(name string, v *tensor.Dense) *gorgonia.Node { return graphtest.Param(g, name, v) }, in)
		if err != nil {
			t.Fatal(err)
		}
		graphtest.Run(t, g)
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, y), want[c.name]); e > 1e-15 {
			t.Errorf("%s differs from libm's values by %.3g: %v", c.name, e, graphtest.Values(t, y))
		}
	}
}

// TestActivationsFloat32MatchFloat64: each activation op's output and its
// gradients of sum(c * y) in float32 equal the float64 op's on the same
// inputs (N(0, 3^2), 200 x 256: past ParallelFor's threshold, so the cores
// split the rows) within 1e-6 of the largest entry: the float64 functions
// rounded once, or for SwiGLU the vector kernels (TestSiLUMulMatchesFloat64
// bounds them per element).
func TestActivationsFloat32MatchFloat64(t *testing.T) {
	for _, c := range activationCases {
		t.Run(c.name, func(t *testing.T) {
			results := map[tensor.Dtype][][]float64{}
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				rng := rand.New(rand.NewPCG(51, 52))
				conv := func(v *tensor.Dense) *tensor.Dense { return v }
				if dt == tensor.Float32 {
					conv = graphtest.ToF32
				}
				in := func() *tensor.Dense { return conv(graphtest.RandDense(rng, 3, 200, 256)) }
				g := gorgonia.NewGraph()
				p := func(name string, v *tensor.Dense) *gorgonia.Node { return graphtest.Param(g, name, v) }
				y, wrt, err := c.build(p, in)
				if err != nil {
					t.Fatal(err)
				}
				cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, p("c", in())))))
				_, grads := graphtest.Gradients(t, g, cost, wrt)
				results[dt] = append([][]float64{append([]float64(nil), graphtest.Values(t, y)...)}, grads...)
			}
			for i, want := range results[tensor.Float64] {
				graphtest.CheckRelative(t, fmt.Sprintf("float32 result %d", i), results[tensor.Float32][i], want, 1e-6)
			}
		})
	}
}

// TestSigmoidSaturates: the float64 SwiGLU stays exact where the sigmoid
// is within an ulp of 0 or 1, and finite where exp(-z) overflows.
func TestSigmoidSaturates(t *testing.T) {
	for _, c := range []struct{ z, want float64 }{
		{40, 40}, {-40, -40 * math.Exp(-40)}, {-800, 0}, {800, 800},
	} {
		if got := c.z * sigmoid(c.z); math.Abs(got-c.want) > 1e-15*math.Abs(c.want) {
			t.Errorf("silu(%v) = %v, want %v", c.z, got, c.want)
		}
	}
}
