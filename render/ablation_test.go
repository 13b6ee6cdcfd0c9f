package render

import (
	"strings"
	"testing"
)

// TestAblationOfALanguageModel: the ablation table of a language model
// (the text task) leaves out the exact match, 0 throughout for it, from
// the intact line and the columns; a toy task's keeps it.
func TestAblationOfALanguageModel(t *testing.T) {
	a := Ablation{Mode: "zero", Replacement: "zeros", Examples: 4, Loss: 2, TokenAcc: 0.5, ExactMatch: 0.25,
		Rows: []AblationRow{{Layer: 0, Head: 1, Role: "previous-token", Loss: 2.5, DeltaLoss: 0.5, DeltaTokenAcc: -0.1, DeltaExactMatch: -0.125}}}
	for _, language := range []bool{false, true} {
		a.Language = language
		var b strings.Builder
		p := &printer{w: &b}
		writeAblation(p, 200, a)
		out := b.String()
		for _, exact := range []string{"exact match 0.2500", "Δexact", "-0.1250"} {
			if strings.Contains(out, exact) == language {
				t.Errorf("language model %v: %q shown %v:\n%s", language, exact, !language, out)
			}
		}
		if !strings.Contains(out, "token acc 0.5000") || !strings.Contains(out, "-0.1000") {
			t.Errorf("language model %v: the token accuracy is missing:\n%s", language, out)
		}
	}
}
