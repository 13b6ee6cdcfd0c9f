package analysis

import (
	"reflect"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/open/opentest"
)

// TestForwardTokens: a pass on tokens alone is the pass Forward gives with
// each position's next token as its target, and a batch of tokens gets
// those targets, scored at every position but the last.
func TestForwardTokens(t *testing.T) {
	m := opentest.Induction(t).Model
	tokens := []int{3, 7, 1, 9, 4, 3, 7, 1, 9}
	got, err := ForwardTokens(m, tokens)
	if err != nil {
		t.Fatal(err)
	}
	targets := append(tokens[1:len(tokens):len(tokens)], 0)
	scored := []float64{1, 1, 1, 1, 1, 1, 1, 1, 0}
	want, err := Forward(m, tokens, targets, scored)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Attention, want.Attention) || !reflect.DeepEqual(got.Logits.Float64s(), want.Logits.Float64s()) || !reflect.DeepEqual(got.Predictions, want.Predictions) {
		t.Error("ForwardTokens differs from Forward with next-token targets")
	}
	c, err := RunTokensWithCache(m, [][]int{tokens, tokens}, Weights(m)...)
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Batch; b.Size != 2 || !reflect.DeepEqual(b.Targets[9:], targets) || !reflect.DeepEqual(b.Mask[9:], scored) {
		t.Errorf("batch of tokens: size %d, targets %v, mask %v", b.Size, b.Targets, b.Mask)
	}
}

// TestRunTokensRefuses: sequences a forward cannot run are refused before
// a graph is built, in one line naming the sequence and position.
func TestRunTokensRefuses(t *testing.T) {
	m := opentest.Induction(t).Model // a vocabulary of 32, learned positions of 24
	long := make([]int, 25)
	for _, c := range []struct {
		seqs [][]int
		want string
	}{
		{nil, "no sequences"},
		{[][]int{{}}, "sequence 0 is empty"},
		{[][]int{{1, 2}, {1}}, "sequence 1 has 1 tokens, sequence 0 2"},
		{[][]int{{1, 2}, {1, 32}}, "sequence 1: token 32 at position 1 is outside the vocabulary [0, 32)"},
		{[][]int{{-1}}, "sequence 0: token -1 at position 0 is outside the vocabulary"},
		{[][]int{long}, "25 tokens is longer than the model's context of 24"},
	} {
		_, err := RunTokensWithCache(m, c.seqs, Weights(m)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line with %q", c.seqs, err, c.want)
		}
	}
}
