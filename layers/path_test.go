package layers

import (
	"fmt"
	"maps"
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

// TestLayersAgreeAcrossPaths: Linear, LayerNorm (with and without bias),
// RMSNorm, the soft-cap and every feed-forward kind (feedForwardKinds: the
// MLP of each activation, SwiGLU, GeGLU, with and without biases) on the
// Gorgonia path (Mul,
// Transpose, BroadcastAdd, Sum, Square, Sqrt, BroadcastHadamardDiv, Cube,
// Tanh, Sigmoid, ops.Erf, ...) give the Fused path's output and gradients
// of sum(c * y) (float64 within 1e-12, float32 within 1e-5, relative to
// the largest entry), and in float64 the Gorgonia path's
// gradients match central differences (h 1e-6) of its own cost within 1e-7
// relative to the gradient's norm, so both Gorgonia's forward kernels and
// its derived gradients are checked, in both dtypes.
func TestLayersAgreeAcrossPaths(t *testing.T) {
	const n, d, f = 6, 8, 12
	rng := rand.New(rand.NewPCG(31, 32))
	weights := map[string]*tensor.Dense{
		"l.weight": graphtest.RandDense(rng, 0.5, d, d), "l.bias": graphtest.RandDense(rng, 0.5, d),
		"ln.weight": graphtest.RandDense(rng, 0.5, d), "ln.bias": graphtest.RandDense(rng, 0.5, d),
	}
	maps.Copy(weights, feedForwardWeights(rng, d, f))
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
		{"softcap", func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			return graphtest.Must(t)(SoftCap(path, "softcap", x, 0.7, 1.3)), gorgonia.Nodes{x} // x of std 1 reaches where tanh bends
		}},
	}
	for _, k := range feedForwardKinds {
		cases = append(cases, pathCase{"mlp/" + k.String(), func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			ff, params := k.build(t, g, p, path)
			return graphtest.Must(t)(ff.Forward(x)), append(gorgonia.Nodes{x}, params...)
		}})
	}
	for _, k := range normKinds {
		cases = append(cases, pathCase{k.name, func(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, p map[string]*tensor.Dense, path Path) (*gorgonia.Node, gorgonia.Nodes) {
			norm, params := buildNorm(t, g, k, p, path, LayerNormEps)
			return graphtest.Must(t)(norm.Forward(x)), append(gorgonia.Nodes{x}, params...)
		}})
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

// TestAttentionEqualsDecomposed: Forward on the Fused path (splitHeads,
// attnScores, attnApply, mergeHeads, linearOp) gives the outputs, weights and
// gradients (of sum(c * out) with respect to x and every weight, c random)
// of the same attention on the Gorgonia path (Mul, Reshape, Transpose,
// Slice, BatchedMatMul), for
// float64 (tolerance 1e-12) and float32 (1e-5), both relative to the
// largest entry when it exceeds 1, causal or not, with key padding and a
// dropout mask, at a toy size and at one large enough for every kernel's
// multi-core path. The graph is run twice, so reused output buffers must not
// leak one run into the next.
func TestAttentionEqualsDecomposed(t *testing.T) {
	for _, c := range []struct {
		dtype             tensor.Dtype
		causal, pad, drop bool
		b, tt, d, h       int
	}{
		{tensor.Float64, true, false, false, 2, 5, 12, 3}, {tensor.Float64, false, true, true, 2, 5, 12, 3},
		{tensor.Float64, true, true, true, 2, 5, 12, 3},
		{tensor.Float32, true, false, false, 2, 5, 12, 3}, {tensor.Float32, false, true, true, 2, 5, 12, 3},
		// large enough for every kernel's multi-core path (rows, pairs, GEMM blocks)
		{tensor.Float32, true, false, false, 16, 64, 64, 4}, {tensor.Float64, true, false, false, 16, 64, 64, 4},
	} {
		b, tt, d, h := c.b, c.tt, c.d, c.h
		t.Run(fmt.Sprintf("%v,causal=%t,pad=%t,drop=%t,B%dT%dD%dH%d", c.dtype, c.causal, c.pad, c.drop, b, tt, d, h), func(t *testing.T) {
			tol := 1e-12
			if c.dtype == tensor.Float32 {
				tol = 1e-5
			}
			rng := rand.New(rand.NewPCG(21, 22))
			p := newMHSAParams(rng, d, true)
			xv, cv := graphtest.RandDense(rng, 1, b*tt, d), graphtest.RandDense(rng, 1, b*tt, d)
			kmv := tensor.New(tensor.WithShape(2, 5), tensor.WithBacking([]float64{0, 1, 1, 1, 1, 1, 1, 1, 0, 0}))
			dmv := graphtest.RandDense(rng, 1, b, h, tt, tt)
			for i, v := range dmv.Float64s() {
				dmv.Float64s()[i] = float64(map[bool]int{true: 2, false: 0}[v > 0])
			}
			conv := func(v *tensor.Dense) *tensor.Dense {
				if c.dtype == tensor.Float32 {
					return graphtest.ToF32(v)
				}
				return v.Clone().(*tensor.Dense)
			}
			type result struct {
				out, w []float64
				grads  [][]float64
			}
			build := func(fused bool) result {
				g := gorgonia.NewGraph()
				x := NewParam(g, "x", conv(xv))
				var km, dm *gorgonia.Node
				if c.pad {
					km = NewParam(g, "key_mask", conv(kmv))
				}
				if c.drop {
					dm = NewParam(g, "drop_mask", conv(dmv))
				}
				cp := mhsaParams{conv(p.qkvW), conv(p.qkvB), conv(p.outW), conv(p.outB)}
				a := cp.build(t, g, "attn", b, tt, h, c.causal)
				if !fused {
					a.SetPath(Gorgonia)
				}
				built, err := a.Forward(x, AttentionInputs{KeyMask: km, Dropout: dm})
				if err != nil {
					t.Fatal(err)
				}
				out, w := built.Out, built.Weights
				cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(out, NewParam(g, "c", conv(cv))))))
				wrt := gorgonia.Nodes{x, a.QKV.Weight, a.QKV.Bias, a.Out.Weight, a.Out.Bias}
				grads, err := gorgonia.Grad(cost, wrt...)
				if err != nil {
					t.Fatal(err)
				}
				vm := gorgonia.NewTapeMachine(g)
				defer vm.Close()
				var r result
				for run := 0; run < 2; run++ {
					vm.Reset()
					if err := vm.RunAll(); err != nil {
						t.Fatal(err)
					}
					r = result{out: append([]float64(nil), graphtest.Values(t, out)...), w: append([]float64(nil), graphtest.Values(t, w)...)}
					for _, gr := range grads {
						r.grads = append(r.grads, append([]float64(nil), graphtest.Values(t, gr)...))
					}
				}
				return r
			}
			want, got := build(false), build(true)
			// the tolerance is relative to the largest entry (float32 sums of
			// 64 terms in another order differ by a few ulps of the largest)
			check := func(what string, got, want []float64) { t.Helper(); graphtest.CheckRelative(t, what, got, want, tol) }
			check("output", got.out, want.out)
			check("weights", got.w, want.w)
			for i, name := range []string{"x", "qkv.weight", "qkv.bias", "out.weight", "out.bias"} {
				check("gradient of "+name, got.grads[i], want.grads[i])
			}
		})
	}
}
