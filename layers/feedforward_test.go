package layers

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// feedForwardKind is one feed-forward layer: an MLP of an activation, or
// SwiGLU, or GeGLU; with or without its biases.
type feedForwardKind struct {
	act           Activation
	swiglu, geglu bool
	bias          bool
}

func (k feedForwardKind) String() string {
	name := string(k.act)
	if k.swiglu {
		name = "swiglu"
	}
	if k.geglu {
		name = "geglu"
	}
	if !k.bias {
		name += ",no-bias"
	}
	return name
}

// feedForwardKinds are every activation with biases, and GPT-2's,
// SwiGLU and GeGLU also without.
var feedForwardKinds = []feedForwardKind{
	{act: GELUTanh, bias: true}, {act: GELU, bias: true}, {act: ReLU2, bias: true}, {swiglu: true, bias: true},
	{geglu: true, bias: true}, {act: GELUTanh}, {swiglu: true}, {geglu: true},
}

// feedForwardWeights are the weights every kind reads, named as a block's
// mlp.fc, mlp.proj, mlp.gate, mlp.up and mlp.down, for width d and hidden
// width f.
func feedForwardWeights(rng *rand.Rand, d, f int) map[string]*tensor.Dense {
	w := map[string]*tensor.Dense{}
	for _, l := range []struct {
		name    string
		out, in int
	}{{"fc", f, d}, {"proj", d, f}, {"gate", f, d}, {"up", f, d}, {"down", d, f}} {
		w["mlp."+l.name+".weight"] = graphtest.RandDense(rng, 0.5, l.out, l.in)
		w["mlp."+l.name+".bias"] = graphtest.RandDense(rng, 0.5, l.out)
	}
	return w
}

// build makes the layer from w's tensors on path; it returns the layer and
// its parameter nodes (weights, then biases when it has them, in order).
func (k feedForwardKind) build(t *testing.T, g *gorgonia.ExprGraph, w map[string]*tensor.Dense, path Path) (FeedForward, gorgonia.Nodes) {
	t.Helper()
	var params gorgonia.Nodes
	linear := func(name string) *Linear {
		weight := NewParam(g, "mlp."+name+".weight", w["mlp."+name+".weight"])
		var bias *gorgonia.Node
		params = append(params, weight)
		if k.bias {
			bias = NewParam(g, "mlp."+name+".bias", w["mlp."+name+".bias"])
			params = append(params, bias)
		}
		l, err := NewLinear(weight, bias)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var ff FeedForward
	var err error
	switch {
	case k.swiglu:
		ff, err = NewSwiGLU(linear("gate"), linear("up"), linear("down"))
	case k.geglu:
		ff, err = NewGeGLU(linear("gate"), linear("up"), linear("down"))
	default:
		ff, err = NewMLP(linear("fc"), linear("proj"), k.act)
	}
	if err != nil {
		t.Fatal(err)
	}
	ff.SetPath(path)
	return ff, params
}

// reference is the layer on x (n, d) in plain-Go float64 loops, from w's
// tensors.
func (k feedForwardKind) reference(x []float64, n int, w map[string]*tensor.Dense) []float64 {
	linear := func(x []float64, name string) []float64 {
		var b *tensor.Dense
		if k.bias {
			b = w["mlp."+name+".bias"]
		}
		return refLinear(x, n, w["mlp."+name+".weight"], b)
	}
	if k.swiglu || k.geglu {
		h, up := linear(x, "gate"), linear(x, "up")
		for i, z := range h {
			if k.geglu {
				h[i] = graphtest.Activation(string(GELUTanh), z) * up[i]
				continue
			}
			h[i] = graphtest.SiLU(z) * up[i]
		}
		return linear(h, "down")
	}
	h := linear(x, "fc")
	for i, v := range h {
		h[i] = graphtest.Activation(string(k.act), v)
	}
	return linear(h, "proj")
}

// TestFeedForwardMatchesReference: every MLP activation and SwiGLU, with and
// without biases, on both paths, gives the plain-Go float64 reference's
// output: float64 within 1e-12, float32 within 1e-5, of the largest entry
// (at least 1).
func TestFeedForwardMatchesReference(t *testing.T) {
	const n, d, f = 6, 8, 12
	rng := rand.New(rand.NewPCG(61, 62))
	w, xv := feedForwardWeights(rng, d, f), graphtest.RandDense(rng, 1, n, d)
	for _, k := range feedForwardKinds {
		want := k.reference(xv.Float64s(), n, w)
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			tol, conv := 1e-12, func(v *tensor.Dense) *tensor.Dense { return v }
			if dt == tensor.Float32 {
				tol, conv = 1e-5, graphtest.ToF32
			}
			t.Run(fmt.Sprintf("%v/%v", k, dt), func(t *testing.T) {
				eachPath(t, func(t *testing.T, path Path) {
					g := gorgonia.NewGraph()
					wc := map[string]*tensor.Dense{}
					for name, v := range w {
						wc[name] = conv(v)
					}
					ff, _ := k.build(t, g, wc, path)
					y := graphtest.Must(t)(ff.Forward(NewParam(g, "x", conv(xv))))
					graphtest.Run(t, g)
					graphtest.CheckRelative(t, "output", graphtest.Values(t, y), want, tol)
				})
			})
		}
	}
}

// TestFeedForwardErrors: mismatched projections and an unknown activation
// are refused, each in one line naming what is wanted.
func TestFeedForwardErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	g := gorgonia.NewGraph()
	linear := func(name string, out, in int) *Linear {
		l, err := NewLinear(NewParam(g, name, graphtest.RandDense(rng, 1, out, in)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	up, down, wide := linear("up", 6, 4), linear("down", 4, 6), linear("wide", 7, 4)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"swiglu with up wider than gate", second(NewSwiGLU(up, wide, down)), "swiglu: need gate and up (D -> F) and down (F -> D)"},
		{"swiglu with down from the wrong width", second(NewSwiGLU(up, up, linear("down7", 4, 7))), "swiglu: need gate and up"},
		{"swiglu without down", second(NewSwiGLU(up, up, nil)), "swiglu: need gate and up"},
		{"geglu with up wider than gate", second(NewGeGLU(up, wide, down)), "geglu: need gate and up (D -> F) and down (F -> D)"},
		{"mlp of swiglu", second(NewMLP(up, down, "swiglu")), `mlp: activation "swiglu": want gelu_tanh, gelu or relu2 (SwiGLU is a layer of its own)`},
		{"mlp of tanh", second(NewMLP(up, down, "tanh")), `mlp: activation "tanh": want`},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", c.name, c.err, c.want)
		}
	}
}

// second is the error of a constructor's two results.
func second[T any](_ T, err error) error { return err }
