package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestICLWithoutInductionHead: a copy predicted a nat or more better than
// its first occurrence by a model with no induction head gets one line
// saying how that can be; a model with one, or a small score, does not.
func TestICLWithoutInductionHead(t *testing.T) {
	const line = "no head has the induction role, yet the copy's loss is"
	for _, c := range []struct {
		score     float64
		induction int
		want      bool
	}{
		{-14.6, 0, true},
		{-1, 0, true},
		{-0.5, 0, false},
		{-14.6, 2, false},
	} {
		v := Inspect{Checkpoint: "m", Model: Model{Layers: 1, Heads: 2}, Task: "induction", Samples: 4, Summary: true,
			Circuits: &Circuits{Layers: 1, Heads: 2, ICL: &ICL{Pairs: 40, Late: 0.1, Early: 0.1 - c.score, Score: c.score, InductionHeads: c.induction}}}
		var b bytes.Buffer
		if err := WriteInspect(&b, v, Plain, 80); err != nil {
			t.Fatal(err)
		}
		out := strings.ReplaceAll(b.String(), "\n  ", " ")
		if got := strings.Contains(out, line); got != c.want {
			t.Errorf("ICL score %+.1f, %d induction heads: the line without an induction head shown %t, want %t:\n%s", c.score, c.induction, got, c.want, b.String())
		}
		if c.want && !strings.Contains(out, "predicts repeats without an induction head, e.g. positionally") {
			t.Errorf("ICL score %+.1f: the line does not name the positional way:\n%s", c.score, b.String())
		}
	}
}
