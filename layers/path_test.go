package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// pathCase builds one layer on a path: it returns the output node and the
// nodes to differentiate (x first, then the weights).
type pathCase struct {
	name  string
	build func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes)
}

// TestLayersAgreeAcrossPaths: Linear, LayerNorm and the MLP (Linear, GELU,
// Linear) on the Gorgonia path (Mul, Transpose, BroadcastAdd, Sum, Square,
// Sqrt, BroadcastHadamardDiv, Cube, Tanh, ...) give the Fused path's output
// and gradients of sum(c * y) (float64 within 1e-12, float32 within 1e-5,
// relative to the largest entry), and in float64 the Gorgonia path's
// gradients match central differences (h 1e-6) of its own cost within 1e-7
// relative to the gradient's norm, so both Gorgonia's forward kernels and
// its derived gradients are checked, in both dtypes.
func TestLayersAgreeAcrossPaths(t *testing.T) {
	const n, d, f = 6, 8, 12
	rng := rand.New(rand.NewPCG(31, 32))
	weights := map[string]*tensor.Dense{
		"l.weight": graphtest.RandDense(rng, 0.5, d, d), "l.bias": graphtest.RandDense(rng, 0.5, d),
		"ln.weight": graphtest.RandDense(rng, 0.5, d), "ln.bias": graphtest.RandDense(rng, 0.5, d),
		"mlp.fc.weight": graphtest.RandDense(rng, 0.5, f, d), "mlp.fc.bias": graphtest.RandDense(rng, 0.5, f),
		"mlp.proj.weight": graphtest.RandDense(rng, 0.5, d, f), "mlp.proj.bias": graphtest.RandDense(rng, 0.5, d),
	}
	xv, cv := graphtest.RandDense(rng, 1, n, d), graphtest.RandDense(rng, 1, n, d)
	linear := func(t *testing.T, g *gorgonia.ExprGraph, p map[string]*tensor.Dense, name string, path Path) *Linear {
		l, err := NewLinear(NewParam(g, name+".weight", p[name+".weight"]), NewParam(g, name+".bias", p[name+".bias"]))
		if err != nil {
			t.Fatal(err)
		}
		l.Path = path
		return l
	}
	cases := []pathCase{
		{"linear", func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			l := linear(t, g, p, "l", path)
			return graphtest.Must(t)(l.Forward(x)), gorgonia.Nodes{x, l.Weight, l.Bias}
		}},
		{"layernorm", func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			ln, err := NewLayerNorm(NewParam(g, "ln.weight", p["ln.weight"]), NewParam(g, "ln.bias", p["ln.bias"]))
			if err != nil {
				t.Fatal(err)
			}
			ln.Path = path
			return graphtest.Must(t)(ln.Forward(x)), gorgonia.Nodes{x, ln.Weight, ln.Bias}
		}},
		{"mlp", func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			m, err := NewMLP(linear(t, g, p, "mlp.fc", path), linear(t, g, p, "mlp.proj", path))
			if err != nil {
				t.Fatal(err)
			}
			m.Path = path
			return graphtest.Must(t)(m.Forward(x)), gorgonia.Nodes{x, m.FC.Weight, m.FC.Bias, m.Proj.Weight, m.Proj.Bias}
		}},
	}
	for _, c := range cases {
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			t.Run(fmt.Sprintf("%s/%v", c.name, dt), func(t *testing.T) {
				tol := 1e-12
				conv := func(v *tensor.Dense) *tensor.Dense { return v.Clone().(*tensor.Dense) }
				if dt == tensor.Float32 {
					tol, conv = 1e-5, graphtest.ToF32
				}
				type run struct {
					out   []float64
					grads [][]float64
				}
				results := map[Path]run{}
				for _, path := range Paths {
					p := map[string]*tensor.Dense{}
					for k, v := range weights {
						p[k] = conv(v)
					}
					g := gorgonia.NewGraph()
					x := NewParam(g, "x", conv(xv))
					y, wrt := c.build(t, g, x, p, path)
					cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, NewParam(g, "c", conv(cv))))))
					eval, grads := graphtest.Gradients(t, g, cost, wrt)
					r := run{out: append([]float64(nil), graphtest.Values(t, y)...), grads: grads}
					results[path] = r
					if path == Gorgonia && dt == tensor.Float64 {
						graphtest.FiniteDifferences(t, wrt, r.grads, eval)
					}
				}
				want, got := results[Fused], results[Gorgonia]
				check := func(what string, got, want []float64) { t.Helper(); graphtest.CheckRelative(t, what, got, want, tol) }
				check("output", got.out, want.out)
				for i := range want.grads {
					check(fmt.Sprintf("gradient %d", i), got.grads[i], want.grads[i])
				}
			})
		}
	}
}
