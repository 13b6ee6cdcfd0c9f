package analysis_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
)

// TransformerLens's run_with_cache and cache["blocks.1.attn.hook_pattern"]:
// one run of a text keeping activations by TransformerLens's names (a glob
// among them), each read in the graph's layout (Get) or in
// TransformerLens's, batch first (TL), in the model's dtype.
func ExampleRunTokensWithCache_transformerLens() {
	op, err := open.Open("../open/nanogpt/testdata/bias/ckpt.pt", open.Options{Vocab: "../open/nanogpt/testdata/meta.pkl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	tokens, err := op.Tokenizer.Encode("the lamp lit early; the lamp")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := analysis.RunTokensWithCache(op.Model, [][]int{tokens}, "blocks.1.attn.hook_pattern", "blocks.*.hook_resid_post")
	if err != nil {
		fmt.Println(err)
		return
	}
	pattern, err := c.Get("blocks.1.attn.hook_pattern") // (batch, head, query, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	resid, err := c.TL("blocks.0.hook_resid_post") // (batch, pos, d_model); Get gives (batch*pos, d_model)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pattern", pattern.Shape, pattern.Dtype())
	fmt.Println("resid_post", resid.Shape)
	last := len(tokens) - 1
	fmt.Printf("layer 1 head 0, from the last %q to key 19 %q: %.2f\n",
		op.Tokenizer.Token(tokens[last]), op.Tokenizer.Token(tokens[19]), pattern.Matrix(0, 0)[last][19])
	// Output:
	// pattern [1 2 28 28] float32
	// resid_post [1 28 32]
	// layer 1 head 0, from the last "p" to key 19 " ": 0.25
}

// TransformerLens's run_with_hooks: a Go function at blocks.1.attn.hook_z
// zeroes head 0's output (the graph holds hook_z as (batch, head, pos,
// d_head); TransformerLens as (batch, pos, head, d_head)) for the ops
// downstream: the prediction after the text holds, its logit moves.
func ExampleRunTokensWithHooks() {
	op, err := open.Open("../open/nanogpt/testdata/bias/ckpt.pt", open.Options{Vocab: "../open/nanogpt/testdata/meta.pkl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	text := "the lamp lit early; the lamp"
	tokens, err := op.Tokenizer.Encode(text)
	if err != nil {
		fmt.Println(err)
		return
	}
	zeroHead0 := func(name string, z *tensor.Dense) (*tensor.Dense, error) {
		t, d := z.Shape()[2], z.Shape()[3]
		clear(z.Float32s()[:t*d]) // example 0, head 0: every position
		return z, nil
	}
	last := len(tokens) - 1
	for _, hooks := range [][]analysis.Hook{nil, {{Name: "blocks.1.attn.hook_z", Fn: zeroHead0}}} {
		c, err := analysis.RunTokensWithHooks(op.Model, [][]int{tokens}, hooks)
		if err != nil {
			fmt.Println(err)
			return
		}
		logits := c.Logits.Row(last)
		next := model.Argmax(logits)
		fmt.Printf("%d hooks: after %q the model predicts %q (logit %.2f)\n", len(hooks), text, op.Tokenizer.Token(next), logits[next])
	}
	// Output:
	// 0 hooks: after "the lamp lit early; the lamp" the model predicts "e" (logit 3.76)
	// 1 hooks: after "the lamp lit early; the lamp" the model predicts "e" (logit 3.89)
}
