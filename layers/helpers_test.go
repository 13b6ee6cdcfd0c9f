package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// mhsaParams are the weights of one attention layer in PyTorch layout.
type mhsaParams struct {
	qkvW, qkvB, outW, outB *tensor.Dense // (3D, D), (3D) or nil, (D, D), (D) or nil
}

func newMHSAParams(rng *rand.Rand, d int, bias bool) mhsaParams {
	p := mhsaParams{qkvW: graphtest.RandDense(rng, 0.5, 3*d, d), outW: graphtest.RandDense(rng, 0.5, d, d)}
	if bias {
		p.qkvB, p.outB = graphtest.RandDense(rng, 0.5, 3*d), graphtest.RandDense(rng, 0.5, d)
	}
	return p
}

// build adds the parameters to g (names prefixed by name) and returns the
// layer.
func (p mhsaParams) build(t *testing.T, g *gorgonia.ExprGraph, name string, b, tt, h int, causal bool) *MultiHeadSelfAttention {
	t.Helper()
	param := func(suffix string, v *tensor.Dense) *gorgonia.Node {
		if v == nil {
			return nil
		}
		return NewParam(g, name+suffix, v)
	}
	qkv, err := NewLinear(param(".qkv.weight", p.qkvW), param(".qkv.bias", p.qkvB))
	if err != nil {
		t.Fatal(err)
	}
	out, err := NewLinear(param(".out.weight", p.outW), param(".out.bias", p.outB))
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewMultiHeadSelfAttention(b, tt, h, qkv, out, AttentionOptions{Bidirectional: !causal})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// forward builds the layer in g (names prefixed "attn") and applies it to x.
func (p mhsaParams) forward(t *testing.T, g *gorgonia.ExprGraph, x *gorgonia.Node, b, tt, h int, causal bool, in AttentionInputs) AttentionOutput {
	t.Helper()
	built, err := p.build(t, g, "attn", b, tt, h, causal).Forward(x, in)
	if err != nil {
		t.Fatal(err)
	}
	return built
}

// refLinear is y = x W^T + b on row-major slices: x (n, in), w (out, in).
func refLinear(x []float64, n int, w, b *tensor.Dense) []float64 {
	out, in := w.Shape()[0], w.Shape()[1]
	wd := w.Float64s()
	y := make([]float64, n*out)
	for r := 0; r < n; r++ {
		for o := 0; o < out; o++ {
			var s float64
			if b != nil {
				s = b.Float64s()[o]
			}
			for i := 0; i < in; i++ {
				s += x[r*in+i] * wd[o*in+i]
			}
			y[r*out+o] = s
		}
	}
	return y
}

// refAttention is the textbook per-head loop: for each batch row and head,
// slice q, k, v of that head out of the fused projection, score every
// allowed key, softmax, sum the values, write the head's slot of the
// concatenation; then the output projection. keyMask (B*T) may be nil.
// It returns the output (B*T, D) and weights (B, H, T, T), flattened.
func refAttention(x []float64, b, tt, h int, causal bool, keyMask []float64, p mhsaParams) (out, weights []float64) {
	d := p.outW.Shape()[0]
	dh := d / h
	qkv := refLinear(x, b*tt, p.qkvW, p.qkvB) // (B*T, 3D)
	concat := make([]float64, b*tt*d)
	weights = make([]float64, b*h*tt*tt)
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			head := func(t, which, c int) float64 { return qkv[(bi*tt+t)*3*d+which*d+hi*dh+c] }
			for i := 0; i < tt; i++ {
				scores := make([]float64, tt)
				allowed := make([]bool, tt)
				maxv := math.Inf(-1)
				for j := 0; j < tt; j++ {
					allowed[j] = (!causal || j <= i) && (keyMask == nil || keyMask[bi*tt+j] != 0)
					if !allowed[j] {
						continue
					}
					for c := 0; c < dh; c++ {
						scores[j] += head(i, 0, c) * head(j, 1, c)
					}
					scores[j] /= math.Sqrt(float64(dh))
					maxv = math.Max(maxv, scores[j])
				}
				var sum float64
				for j := range scores {
					if allowed[j] {
						scores[j] = math.Exp(scores[j] - maxv)
						sum += scores[j]
					}
				}
				for j := range scores {
					w := 0.0
					if allowed[j] {
						w = scores[j] / sum
					}
					weights[((bi*h+hi)*tt+i)*tt+j] = w
					for c := 0; c < dh; c++ {
						concat[(bi*tt+i)*d+hi*dh+c] += w * head(j, 2, c)
					}
				}
			}
		}
	}
	return refLinear(concat, b*tt, p.outW, p.outB), weights
}

// eachPath runs f once per path, as a subtest named after it.
func eachPath(t *testing.T, f func(t *testing.T, path Path)) {
	for _, path := range Paths {
		t.Run(string(path), func(t *testing.T) { f(t, path) })
	}
}
