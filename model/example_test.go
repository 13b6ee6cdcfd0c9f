package model_test

import (
	"fmt"
	"slices"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// A function at TransformerLens's blocks.0.hook_mlp_out zeroes the MLP's
// output, so the stream out of block 0 is the stream between its
// sublayers; the activations are asked by TransformerLens's names and a
// glob, and read by either.
func ExampleGraph_SetHook() {
	cfg := model.Config{Vocab: 7, Context: 4, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16}
	m, err := model.New(cfg, tensor.Float64, 1)
	if err != nil {
		panic(err)
	}
	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: 4,
		Hooks: []string{"blocks.0.hook_mlp_out"}, Cache: []string{"blocks.0.hook_resid_*"}})
	if err != nil {
		panic(err)
	}
	zero := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		return tensor.New(tensor.WithShape(x.Shape()...), tensor.Of(x.Dtype())), nil
	}
	if err := g.SetHook("blocks.0.hook_mlp_out", zero); err != nil {
		panic(err)
	}
	tokens := []int{1, 2, 3, 4}
	if err := g.Feed(tokens, tokens, []float64{1, 1, 1, 1}); err != nil {
		panic(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		panic(err)
	}
	mid, _ := g.Activation("blocks.0.hook_resid_mid")
	post, _ := g.Activation("blocks.0.resid_post")
	spec, _ := g.ActivationSpec("blocks.0.resid_post")
	fmt.Println(g.Opts.Cache)
	fmt.Println(spec.TL, spec.Shape, spec.TLShape())
	fmt.Println("resid_post == resid_mid:", slices.Equal(post.Float64s(), mid.Float64s()))
	// Output:
	// [blocks.0.resid_pre blocks.0.resid_mid blocks.0.resid_post]
	// blocks.0.hook_resid_post (4, 8) (1, 4, 8)
	// resid_post == resid_mid: true
}
