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
	attn, err := layers.NewMultiHeadSelfAttention(b, t, h, true, qkv, out)
	if err != nil {
		fmt.Println(err)
		return
	}
	y, weights, err := attn.Forward(x, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("x", x.Shape(), "-> y", y.Shape(), "weights", weights.Shape())

	_, err = layers.NewMultiHeadSelfAttention(b, t, 3, true, qkv, out)
	fmt.Println(err)
	// Output:
	// x (10, 8) -> y (10, 8) weights (2, 2, 5, 5)
	// attention: d_model 8 is not divisible by heads 3
}
