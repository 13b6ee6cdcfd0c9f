package layers_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/attnscope/attnscope/layers"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Two sequences of 5 positions, width 8, 2 heads: activations stay flat
// (B*T, D) and the attention weights come back as (B, H, T, T).
func ExampleMultiHeadSelfAttention() {
	const b, t, d, h = 2, 5, 8, 2
	rng := rand.New(rand.NewPCG(1, 2))
	normal := func(shape ...int) *tensor.Dense {
		v := make([]float64, tensor.Shape(shape).TotalSize())
		for i := range v {
			v[i] = rng.NormFloat64() * 0.02
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	g := gorgonia.NewGraph()
	x := layers.NewParam(g, "x", normal(b*t, d))
	qkv, _ := layers.NewLinear(layers.NewParam(g, "attn.qkv.weight", normal(3*d, d)), nil)
	out, _ := layers.NewLinear(layers.NewParam(g, "attn.out.weight", normal(d, d)), layers.NewParam(g, "attn.out.bias", normal(d)))
	attn, err := layers.NewMultiHeadSelfAttention(b, t, h, qkv, out, layers.AttentionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	built, err := attn.Forward(x, layers.AttentionInputs{})
	if err != nil {
		fmt.Println(err)
		return
	}
	y, weights := built.Out, built.Weights
	fmt.Println("x", x.Shape(), "-> y", y.Shape(), "weights", weights.Shape())

	_, err = layers.NewMultiHeadSelfAttention(b, t, 3, qkv, out, layers.AttentionOptions{})
	fmt.Println(err)
	// Output:
	// x (10, 8) -> y (10, 8) weights (2, 2, 5, 5)
	// attention: d_model = 8 is not divisible by heads = 3
}

// The same attention written in Gorgonia's own ops (SetPath(layers.Gorgonia)):
// every node is named after the layer, so the graph reads like the formula.
func ExampleMultiHeadSelfAttention_gorgonia() {
	const b, t, d, h = 1, 4, 8, 2
	g := gorgonia.NewGraph()
	zeros := func(shape ...int) *tensor.Dense {
		return tensor.New(tensor.WithShape(shape...), tensor.Of(tensor.Float64))
	}
	x := layers.NewParam(g, "x", zeros(b*t, d))
	qkv, _ := layers.NewLinear(layers.NewParam(g, "attn.qkv.weight", zeros(3*d, d)), nil)
	out, _ := layers.NewLinear(layers.NewParam(g, "attn.out.weight", zeros(d, d)), nil)
	attn, err := layers.NewMultiHeadSelfAttention(b, t, h, qkv, out, layers.AttentionOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	attn.SetPath(layers.Gorgonia)
	if _, err := attn.Forward(x, layers.AttentionInputs{}); err != nil {
		fmt.Println(err)
		return
	}
	sorted, _ := gorgonia.Sort(g)
	for i := len(sorted) - 1; i >= 0; i-- {
		if n := sorted[i]; n.Op() != nil {
			fmt.Printf("%-24s %v\n", n.Name(), n.Shape())
		}
	}
	// Output:
	// attn.qkv                 (4, 24)
	// attn.qkv_5d              (1, 4, 3, 2, 4)
	// attn.heads               (3, 1, 2, 4, 4)
	// attn.q                   (1, 2, 4, 4)
	// attn.k                   (1, 2, 4, 4)
	// attn.v                   (1, 2, 4, 4)
	// attn.scores              (1, 2, 4, 4)
	// attn.weights             (1, 2, 4, 4)
	// attn.context             (1, 2, 4, 4)
	// attn.context_bthd        (1, 4, 2, 4)
	// attn.merged              (4, 8)
	// attn.out                 (4, 8)
}
