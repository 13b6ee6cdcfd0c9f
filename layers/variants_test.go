package layers

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/internal/ops"
)

// variant is one member of the attention family: its options and, when
// latent > 0, the width r of multi-head latent attention's latent.
type variant struct {
	name   string
	opts   AttentionOptions
	latent int
}

var variants = []variant{
	{"gqa", AttentionOptions{KVHeads: 2}, 0},
	{"mqa", AttentionOptions{KVHeads: 1}, 0},
	{"window", AttentionOptions{Window: 2}, 0},
	{"rope", AttentionOptions{RotaryFreqs: ops.RotaryFrequencies(10, 4)}, 0},
	{"rope partial scaled", AttentionOptions{RotaryFreqs: []float64{0.9, 0.05}}, 0},
	{"head_dim", AttentionOptions{HeadDim: 6}, 0},
	{"head_dim+partial rope+gqa", AttentionOptions{HeadDim: 6, KVHeads: 2, RotaryFreqs: []float64{0.7, 0.2}}, 0},
	{"alibi", AttentionOptions{ALiBi: true}, 0},
	{"rope+gqa+window", AttentionOptions{KVHeads: 2, RotaryFreqs: ops.RotaryFrequencies(10, 4), Window: 3}, 0},
	{"alibi+mqa", AttentionOptions{KVHeads: 1, ALiBi: true}, 0},
	{"latent", AttentionOptions{}, 6},
	{"latent+alibi+window", AttentionOptions{ALiBi: true, Window: 3}, 6},
	{"qknorm", AttentionOptions{QKNorm: &QKNorm{Eps: 1e-3}}, 0},
	{"qknorm+rope+gqa", AttentionOptions{KVHeads: 2, RotaryFreqs: ops.RotaryFrequencies(10, 4), QKNorm: &QKNorm{Eps: 1e-3}}, 0},
	{"qknorm+rope+mqa", AttentionOptions{KVHeads: 1, RotaryFreqs: ops.RotaryFrequencies(10, 4), QKNorm: &QKNorm{Eps: 1e-3}}, 0},
}

// variantWeights are random weights for a variant at width d with h heads
// (QK-norm's weights 1 + N(0, 0.5^2)).
func variantWeights(rng *rand.Rand, v variant, d, h int) map[string]*tensor.Dense {
	dh := v.opts.headDim(d, h)
	w := map[string]*tensor.Dense{"out.weight": graphtest.RandDense(rng, 0.5, d, h*dh), "out.bias": graphtest.RandDense(rng, 0.5, d)}
	if v.latent > 0 {
		w["q.weight"], w["q.bias"] = graphtest.RandDense(rng, 0.5, d, d), graphtest.RandDense(rng, 0.5, d)
		w["kv_down.weight"] = graphtest.RandDense(rng, 0.5, v.latent, d)
		w["kv_up.weight"], w["kv_up.bias"] = graphtest.RandDense(rng, 0.5, 2*d, v.latent), graphtest.RandDense(rng, 0.5, 2*d)
		return w
	}
	width := (h + 2*v.opts.kvHeads(h)) * dh
	w["qkv.weight"], w["qkv.bias"] = graphtest.RandDense(rng, 0.5, width, d), graphtest.RandDense(rng, 0.5, width)
	if v.opts.QKNorm != nil {
		for _, name := range []string{"q_norm.weight", "k_norm.weight"} {
			w[name] = graphtest.RandDense(rng, 0.5, dh)
			for i, x := range w[name].Float64s() {
				w[name].Float64s()[i] = 1 + x
			}
		}
	}
	return w
}

// buildVariant adds the layer's parameters (named "attn.*") to g; a
// variant with QK-norm gets its weights in a QKNorm of the variant's eps.
func buildVariant(t *testing.T, g *gorgonia.ExprGraph, v variant, w map[string]*tensor.Dense, b, tt, h int, conv func(*tensor.Dense) *tensor.Dense) *MultiHeadSelfAttention {
	t.Helper()
	lin := func(name string) *Linear {
		var bias *gorgonia.Node
		if bv, ok := w[name+".bias"]; ok {
			bias = NewParam(g, "attn."+name+".bias", conv(bv))
		}
		l, err := NewLinear(NewParam(g, "attn."+name+".weight", conv(w[name+".weight"])), bias)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var a *MultiHeadSelfAttention
	var err error
	if n := v.opts.QKNorm; n != nil {
		v.opts.QKNorm = &QKNorm{Q: NewParam(g, "attn.q_norm.weight", conv(w["q_norm.weight"])), K: NewParam(g, "attn.k_norm.weight", conv(w["k_norm.weight"])), Eps: n.Eps}
	}
	if v.latent > 0 {
		a, err = NewLatentAttention(b, tt, h, Latent{Q: lin("q"), Down: lin("kv_down"), Up: lin("kv_up")}, lin("out"), v.opts)
	} else {
		a, err = NewMultiHeadSelfAttention(b, tt, h, lin("qkv"), lin("out"), v.opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// refVariant is the textbook loop for a variant, float64, written from the
// definitions: projections, k and v of query head h from key/value head
// h/(H/G), q and k of each head normalised by QK-norm (q / sqrt(mean(q^2)
// + eps) * q_norm, k likewise with k_norm), then of position t turned by
// rotary angles t*freqs[i] on pairs (i, i+R/2) of the first R = 2*len(freqs)
// channels, score q.k/sqrt(d) - slope_h*(i-j) (ALiBi slopes 2^(-8(h+1)/H),
// here H = 4) over keys j <= i (and j > i-W with a window), softmax, weighted
// sum of v, output projection. It returns the output (B*T, D) and weights
// (B, H, T, T).
func refVariant(x []float64, b, tt, h int, v variant, w map[string]*tensor.Dense) (out, weights []float64) {
	d := w["out.weight"].Shape()[0]
	dh, kv := v.opts.headDim(d, h), v.opts.kvHeads(h)
	var q, k, val []float64 // (B*T, H*d), (B*T, G*d), (B*T, G*d)
	if v.latent > 0 {
		q = refLinear(x, b*tt, w["q.weight"], w["q.bias"])
		kvs := refLinear(refLinear(x, b*tt, w["kv_down.weight"], nil), b*tt, w["kv_up.weight"], w["kv_up.bias"])
		k, val = make([]float64, b*tt*d), make([]float64, b*tt*d)
		for r := 0; r < b*tt; r++ {
			copy(k[r*d:], kvs[r*2*d:r*2*d+d])
			copy(val[r*d:], kvs[r*2*d+d:(r+1)*2*d])
		}
	} else {
		qkv := refLinear(x, b*tt, w["qkv.weight"], w["qkv.bias"])
		qw := h * dh
		width := qw + 2*kv*dh
		q, k, val = make([]float64, b*tt*qw), make([]float64, b*tt*kv*dh), make([]float64, b*tt*kv*dh)
		for r := 0; r < b*tt; r++ {
			copy(q[r*qw:], qkv[r*width:r*width+qw])
			copy(k[r*kv*dh:], qkv[r*width+qw:r*width+qw+kv*dh])
			copy(val[r*kv*dh:], qkv[r*width+qw+kv*dh:(r+1)*width])
		}
	}
	vec := func(m []float64, heads, bi, t, hh int) []float64 {
		off := ((bi*tt+t)*heads + hh) * dh
		out := append([]float64(nil), m[off:off+dh]...)
		if v.opts.QKNorm != nil && &m[0] != &val[0] {
			norm := w["k_norm.weight"]
			if &m[0] == &q[0] {
				norm = w["q_norm.weight"]
			}
			graphtest.RMSNorm(out, norm.Float64s(), v.opts.QKNorm.Eps)
		}
		if half := len(v.opts.RotaryFreqs); half > 0 && &m[0] != &val[0] {
			for i, f := range v.opts.RotaryFreqs {
				angle := float64(t) * f
				x1, x2 := out[i], out[i+half]
				out[i] = x1*math.Cos(angle) - x2*math.Sin(angle)
				out[i+half] = x2*math.Cos(angle) + x1*math.Sin(angle)
			}
		}
		return out
	}
	concat := make([]float64, b*tt*h*dh)
	weights = make([]float64, b*h*tt*tt)
	for bi := 0; bi < b; bi++ {
		for hh := 0; hh < h; hh++ {
			g := hh / (h / kv)
			for i := 0; i < tt; i++ {
				qi := vec(q, h, bi, i, hh)
				z := make([]float64, tt)
				maxv := math.Inf(-1)
				for j := 0; j <= i; j++ {
					if v.opts.Window > 0 && j <= i-v.opts.Window {
						continue
					}
					kj := vec(k, kv, bi, j, g)
					for c := range qi {
						z[j] += qi[c] * kj[c]
					}
					z[j] /= math.Sqrt(float64(dh))
					if v.opts.ALiBi {
						z[j] -= math.Pow(2, -8*float64(hh+1)/float64(h)) * float64(i-j)
					}
					maxv = math.Max(maxv, z[j])
				}
				var sum float64
				for j := 0; j <= i; j++ {
					if v.opts.Window == 0 || j > i-v.opts.Window {
						sum += math.Exp(z[j] - maxv)
					}
				}
				for j := 0; j <= i; j++ {
					if v.opts.Window > 0 && j <= i-v.opts.Window {
						continue
					}
					a := math.Exp(z[j]-maxv) / sum
					weights[((bi*h+hh)*tt+i)*tt+j] = a
					vj := vec(val, kv, bi, j, g)
					for c := range vj {
						concat[(bi*tt+i)*h*dh+hh*dh+c] += a * vj[c]
					}
				}
			}
		}
	}
	return refLinear(concat, b*tt, w["out.weight"], w["out.bias"]), weights
}

// TestAttentionVariants holds every variant of the family, on both paths,
// to refVariant (float64: outputs and weights within 1e-12; float32 within
// 1e-5 relative to the largest entry), the two paths' gradients of
// sum(c * out) with respect to x and every weight to each other (float64,
// 1e-12 relative), and the Gorgonia path's gradients to central
// differences (1e-7 relative to the gradient's norm).
func TestAttentionVariants(t *testing.T) {
	const b, tt, d, h = 2, 5, 16, 4
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(41, 42))
			w := variantWeights(rng, v, d, h)
			xv, cv := graphtest.RandDense(rng, 1, b*tt, d), graphtest.RandDense(rng, 1, b*tt, d)
			refOut, refW := refVariant(xv.Float64s(), b, tt, h, v, w)
			for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
				tol := 1e-12
				conv := func(x *tensor.Dense) *tensor.Dense { return x.Clone().(*tensor.Dense) }
				if dt == tensor.Float32 {
					tol, conv = 1e-5, graphtest.ToF32
				}
				grads := map[Path][][]float64{}
				eachPath(t, func(t *testing.T, path Path) {
					g := gorgonia.NewGraph()
					x := NewParam(g, "x", conv(xv))
					a := buildVariant(t, g, v, w, b, tt, h, conv)
					a.SetPath(path)
					built, err := a.Forward(x, AttentionInputs{})
					if err != nil {
						t.Fatal(err)
					}
					cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(built.Out, NewParam(g, "c", conv(cv))))))
					wrt := gorgonia.Nodes{x}
					for _, n := range g.AllNodes() {
						if n.Op() == nil && len(n.Name()) > 5 && n.Name()[:5] == "attn." {
							wrt = append(wrt, n)
						}
					}
					eval, gs := graphtest.Gradients(t, g, cost, wrt)
					graphtest.CheckRelative(t, fmt.Sprintf("%v output", dt), graphtest.Values(t, built.Out), refOut, tol)
					graphtest.CheckRelative(t, fmt.Sprintf("%v weights", dt), graphtest.Values(t, built.Weights), refW, tol)
					if dt == tensor.Float64 {
						grads[path] = gs
						if path == Gorgonia {
							graphtest.FiniteDifferences(t, wrt, gs, eval)
						}
					}
				})
				if dt == tensor.Float64 && len(grads) == 2 {
					for i := range grads[Fused] {
						graphtest.CheckRelative(t, fmt.Sprintf("gradient %d across paths", i), grads[Fused][i], grads[Gorgonia][i], 1e-12)
					}
				}
			}
		})
	}
}

// TestALiBiSlopes: Press et al.'s slopes, for a power of two (the paper's
// 8 heads: 1/2, 1/4, ..., 1/256) and for 6 heads (the 4-head slopes, then
// the 8-head sequence's 1st and 3rd), as their reference code gives them.
func TestALiBiSlopes(t *testing.T) {
	for h, want := range map[int][]float64{
		8: {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625},
		6: {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125},
		1: {0.00390625},
	} {
		got := ALiBiSlopes(h)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("ALiBiSlopes(%d) = %v, want %v", h, got, want)
		}
	}
}

// TestAttentionVariantErrors: impossible combinations are refused by the
// constructors, naming the numbers.
func TestAttentionVariantErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	g := gorgonia.NewGraph()
	lin := func(name string, out, in int) *Linear {
		l, err := NewLinear(NewParam(g, name, graphtest.RandDense(rng, 1, out, in)), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		err  func() error
		want string
	}{
		{"kv heads not dividing", func() error {
			_, err := NewMultiHeadSelfAttention(1, 3, 4, lin("a", 16, 8), lin("b", 8, 8), AttentionOptions{KVHeads: 3})
			return err
		}, "kv_heads = 3 must divide heads = 4"},
		{"qkv width for gqa", func() error {
			_, err := NewMultiHeadSelfAttention(1, 3, 4, lin("c", 24, 8), lin("d", 8, 8), AttentionOptions{KVHeads: 2})
			return err
		}, "qkv projection is 8 -> 24, want 8 -> 16"},
		{"odd head with rope", func() error {
			_, err := NewMultiHeadSelfAttention(1, 3, 2, lin("e", 18, 6), lin("f", 6, 6), AttentionOptions{RotaryFreqs: ops.RotaryFrequencies(10000, 4)})
			return err
		}, "position = rope: 2 rotary pairs for a head of 3 channels: want 1 to 1"},
		{"negative window", func() error {
			_, err := NewMultiHeadSelfAttention(1, 3, 2, lin("g", 24, 8), lin("h", 8, 8), AttentionOptions{Window: -1})
			return err
		}, "window = -1: must be 0 (full) or positive"},
		{"latent with rope", func() error {
			_, err := NewLatentAttention(1, 3, 2, Latent{Q: lin("i", 8, 8), Down: lin("j", 4, 8), Up: lin("k", 16, 4)}, lin("l", 8, 8), AttentionOptions{RotaryFreqs: ops.RotaryFrequencies(10000, 4)})
			return err
		}, "decoupled rotary key"},
		{"latent with kv heads", func() error {
			_, err := NewLatentAttention(1, 3, 2, Latent{Q: lin("m", 8, 8), Down: lin("n", 4, 8), Up: lin("o", 16, 4)}, lin("p", 8, 8), AttentionOptions{KVHeads: 1})
			return err
		}, "kv_latent = 4 with kv_heads = 1: latent attention up-projects one key and value per head"},
		{"latent with qk norm", func() error {
			_, err := NewLatentAttention(1, 3, 2, Latent{Q: lin("q", 8, 8), Down: lin("r", 4, 8), Up: lin("s", 16, 4)}, lin("t", 8, 8), AttentionOptions{QKNorm: &QKNorm{}})
			return err
		}, "qk_norm = true with kv_latent = 4: QK-norm of a latent's keys is not built"},
		{"qk norm weights not vectors", func() error {
			norm := &QKNorm{Q: lin("u", 4, 1).Weight, K: lin("v", 4, 1).Weight}
			_, err := NewMultiHeadSelfAttention(1, 3, 2, lin("w", 24, 8), lin("x", 8, 8), AttentionOptions{QKNorm: norm})
			return err
		}, "qk norm weights (4, 1) and (4, 1), want (4) each, the head size"},
		{"qk norm eps negative", func() error {
			norm := &QKNorm{Q: NewParam(g, "y", graphtest.RandDense(rng, 1, 4)), K: NewParam(g, "z", graphtest.RandDense(rng, 1, 4)), Eps: -1}
			_, err := NewMultiHeadSelfAttention(1, 3, 2, lin("aa", 24, 8), lin("ab", 8, 8), AttentionOptions{QKNorm: norm})
			return err
		}, "qk norm eps -1 must be finite and not negative"},
	} {
		if err := c.err(); err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
