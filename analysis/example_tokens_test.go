package analysis_test

import (
	"cmp"
	"fmt"
	"os"
	"slices"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/tokenizer"
)

// A model trained elsewhere read on your own text: nanoGPT's ckpt.pt of a
// character model and the meta.pkl of its vocabulary (a tiny model trained
// by nanoGPT's train.py on a lighthouse keeper's log), the text encoded by
// its tokenizer, one forward on the tokens alone, and where one head of
// the last layer looks from the last character: at the spaces.
func ExampleForwardTokens() {
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
	pass, err := analysis.ForwardTokens(op.Model, tokens)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("attention", pass.Attention.Shape, "(layer, head, query, key)")
	last := len(tokens) - 1
	row := pass.Map(1, 0)[last] // layer 1, head 0: the last query's weights over the keys
	keys := make([]int, len(row))
	for k := range keys {
		keys[k] = k
	}
	slices.SortStableFunc(keys, func(a, b int) int { return cmp.Compare(row[b], row[a]) }) // largest first
	for _, k := range keys[:3] {
		fmt.Printf("key %2d %q: %.2f\n", k, op.Tokenizer.Token(tokens[k]), row[k])
	}
	fmt.Printf("after %q the model predicts %q\n", text, tokenizer.Decode(op.Tokenizer, pass.Predictions[last:]))
	// Output:
	// attention [2 2 28 28] (layer, head, query, key)
	// key 19 " ": 0.25
	// key 23 " ": 0.23
	// key 12 " ": 0.18
	// after "the lamp lit early; the lamp" the model predicts "e"
}

// Two texts of one length in one run, keeping what the logit lens reads:
// each position's target is the next character, so the lens scores
// next-character prediction after the embeddings and after each block.
func ExampleRunTokensWithCache() {
	op, err := open.Open("../open/nanogpt/testdata/bias/ckpt.pt", open.Options{Vocab: "../open/nanogpt/testdata/meta.pkl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	var seqs [][]int
	for _, text := range []string{"Wind from the west, the sea high", "Fog at dusk; the lamp lit early."} {
		tokens, err := op.Tokenizer.Encode(text)
		if err != nil {
			fmt.Println(err)
			return
		}
		seqs = append(seqs, tokens)
	}
	c, err := analysis.RunTokensWithCache(op.Model, seqs, analysis.Circuit(op.Model)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	lens, err := analysis.LogitLens(c)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range lens {
		fmt.Printf("depth %d: accuracy %.2f\n", l.Depth, l.Accuracy)
	}
	// Output:
	// depth 0: accuracy 0.02
	// depth 1: accuracy 0.21
	// depth 2: accuracy 0.24
}

// Head statistics over a corpus: 40 windows of 24 characters drawn from
// the lighthouse keeper's log, every head scored on each as
// TransformerLens's head detector scores it, and each score's mean and
// spread over the windows. Where a head's attention goes on average, and
// how much that varies from window to window.
func ExampleCorpusHeads() {
	op, err := open.Open("../open/nanogpt/testdata/bias/ckpt.pt", open.Options{Vocab: "../open/nanogpt/testdata/meta.pkl"})
	if err != nil {
		fmt.Println(err)
		return
	}
	text, err := os.ReadFile("../open/nanogpt/testdata/corpus.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids, err := op.Tokenizer.Encode(string(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := analysis.CorpusHeads(op.Model, ids, analysis.CorpusOptions{Windows: 40, Length: 24, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d windows of %d of the %d characters\n", c.Windows, c.Length, c.Tokens)
	for _, h := range c.Heads {
		fmt.Printf("layer %d head %d:", h.Layer, h.Head)
		for _, s := range h.Scores {
			fmt.Printf(" %s %.2f±%.2f", s.Name, s.Mean, s.SD)
		}
		fmt.Println()
	}
	// Output:
	// 40 windows of 24 of the 2790 characters
	// layer 0 head 0: previous-token 0.09±0.03 duplicate-token 0.10±0.04 induction 0.02±0.02 first-token 0.13±0.04 self 0.26±0.04 entropy 1.30±0.14
	// layer 0 head 1: previous-token 0.11±0.03 duplicate-token 0.07±0.03 induction 0.05±0.04 first-token 0.20±0.10 self 0.22±0.06 entropy 1.27±0.15
	// layer 1 head 0: previous-token 0.16±0.02 duplicate-token 0.01±0.02 induction 0.07±0.04 first-token 0.15±0.05 self 0.09±0.03 entropy 1.50±0.24
	// layer 1 head 1: previous-token 0.15±0.03 duplicate-token 0.03±0.05 induction 0.06±0.03 first-token 0.12±0.03 self 0.13±0.03 entropy 1.61±0.16
}
