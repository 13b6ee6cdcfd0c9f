package layers

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// attnBenchSizes are the attention layers of cmd/bench/torch_ref.py's S and M.
var attnBenchSizes = []struct {
	name           string
	b, t, d, heads int
}{
	{"S", 32, 12, 32, 4},
	{"M", 64, 64, 128, 8},
}

// benchAttention builds one causal attention layer (fused QKV without bias,
// output projection with bias, float32) on an input x (B*T, D); with
// backward it also adds the gradients of sum(out) with respect to x and
// every weight, so a run is one forward and backward pass.
func benchAttention(b *testing.B, bt, t, d, heads int, backward bool) gorgonia.VM {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", graphtest.ToF32(graphtest.RandDense(rng, 1, bt*t, d)))
	p := newMHSAParams(rng, d, false)
	p.outB = graphtest.RandDense(rng, 0.5, d)
	qkv, err := NewLinear(NewParam(g, "qkv.weight", graphtest.ToF32(p.qkvW)), nil)
	if err != nil {
		b.Fatal(err)
	}
	out, err := NewLinear(NewParam(g, "out.weight", graphtest.ToF32(p.outW)), NewParam(g, "out.bias", graphtest.ToF32(p.outB)))
	if err != nil {
		b.Fatal(err)
	}
	attn, err := NewMultiHeadSelfAttention(bt, t, heads, qkv, out, AttentionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	built, err := attn.Forward(x, AttentionInputs{})
	if err != nil {
		b.Fatal(err)
	}
	y := built.Out
	if backward {
		cost, err := gorgonia.Sum(y)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := gorgonia.Grad(cost, x, qkv.Weight, out.Weight, out.Bias); err != nil {
			b.Fatal(err)
		}
	}
	return gorgonia.NewTapeMachine(g)
}

func benchmarkAttention(b *testing.B, backward bool) {
	for _, s := range attnBenchSizes {
		b.Run(s.name, func(b *testing.B) {
			vm := benchAttention(b, s.b, s.t, s.d, s.heads, backward)
			defer vm.Close()
			run := func() {
				if err := vm.RunAll(); err != nil {
					b.Fatal(err)
				}
				vm.Reset()
			}
			run()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}

// BenchmarkAttentionForward times the attention layer's forward pass.
func BenchmarkAttentionForward(b *testing.B) { benchmarkAttention(b, false) }

// BenchmarkAttentionForwardBackward times forward and backward together.
func BenchmarkAttentionForwardBackward(b *testing.B) { benchmarkAttention(b, true) }
