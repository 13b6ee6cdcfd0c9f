package analysis_test

import (
	"fmt"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
)

// Attribution patching (Neel Nanda's), TransformerLens's recipe of
// run_with_cache on the corrupted tokens and a backward hook on the clean
// run's logit difference: one clean forward and backward and one corrupted
// forward estimate the effect of patching every head's z and every stream
// activation at every position from the corrupted run into the clean one.
// The clean sequence repeats a block of symbols, so the induction heads
// predict the block's last symbol at the end; the corruption changes that
// symbol in the first copy only. Block 1's heads 3 and 1 carry the answer,
// and the stream carries it at the corrupted position up to block 1 and at
// the last position after block 1's attention.
func ExampleAttributionPatch() {
	m, _, _ := load()
	clean := []int{5, 17, 2, 9, 30, 11, 23, 8, 5, 17, 2, 9, 30, 11, 23}
	corrupted := append([]int(nil), clean...)
	corrupted[7] = 14 // the first copy's last symbol, 8, becomes 14
	a, err := analysis.AttributionPatch(m, [][]int{clean}, [][]int{corrupted}, analysis.LogitDiff(8, 14))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: clean %.1f, corrupted %.1f\n", a.Metric, a.Clean, a.Corrupted)
	for h, e := range a.Heads[1] {
		fmt.Printf("z of layer 1 head %d: %+.1f\n", h, e)
	}
	fmt.Printf("resid_pre of layer 1 at position 7: %+.1f, at 14: %+.1f\n", a.Streams["resid_pre"][1][7], a.Streams["resid_pre"][1][14])
	fmt.Printf("resid_post of layer 1 at position 7: %+.1f, at 14: %+.1f\n", a.Streams["resid_post"][1][7], a.Streams["resid_post"][1][14])
	// Output:
	// logit-diff: clean 19.4, corrupted -28.2
	// z of layer 1 head 0: +0.0
	// z of layer 1 head 1: -8.9
	// z of layer 1 head 2: +0.1
	// z of layer 1 head 3: -38.7
	// resid_pre of layer 1 at position 7: -47.6, at 14: +0.0
	// resid_post of layer 1 at position 7: +0.0, at 14: -47.5
}

// Path patching, as TransformerLens's IOI work runs it: the clean sequence
// repeats a block, and the corruption changes the symbol before the one
// the induction heads copy. Through which input of block 1's induction
// heads (1 and 3) does each head of block 0 carry that change? Head 1, the
// previous-token head, moves the metric most through their keys
// (K-composition): the key they match at the copied position is the
// previous token it wrote there. No head reaches their queries, which sit
// at the last position, far from the corrupted one.
func ExamplePathPatch() {
	m, _, _ := load()
	clean := []int{5, 17, 2, 9, 30, 11, 23, 8, 5, 17, 2, 9, 30, 11, 23}
	corrupted := append([]int(nil), clean...)
	corrupted[6] = 14 // 23 before the copied 8 becomes 14
	receivers := ablation.Heads{{1, 1}, {1, 3}}
	for h := range m.Config.Heads {
		fmt.Printf("head 0.%d:", h)
		for _, input := range []string{"q", "k", "v"} {
			effect, err := analysis.PathPatch(m, [][]int{clean}, [][]int{corrupted}, analysis.LogitDiff(8, 14), [2]int{0, h}, receivers, input)
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Printf(" %s %+.1f", input, effect)
		}
		fmt.Println()
	}
	// Output:
	// head 0.0: q +0.0 k +0.0 v +0.1
	// head 0.1: q +0.0 k -18.7 v -4.9
	// head 0.2: q +0.0 k -0.0 v -4.4
	// head 0.3: q +0.0 k +0.0 v -0.3
}
