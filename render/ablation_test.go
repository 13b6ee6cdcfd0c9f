package render

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestAblationWithoutExactMatch: the ablation table of a set with no
// exact-match target (a language model, a model trained elsewhere) leaves
// out the exact match, from the intact line and the columns; a toy task's
// keeps it. The line says what the heads were removed on.
func TestAblationWithoutExactMatch(t *testing.T) {
	a := Ablation{Mode: "zero", Replacement: "zeros", On: "1 repeated-tokens sequence of 100 tokens", Loss: 2, TokenAcc: 0.5, ExactMatch: 0.25,
		Rows: []AblationRow{{Layer: 0, Head: 1, Role: "previous-token", Loss: 2.5, DeltaLoss: 0.5, DeltaTokenAcc: -0.1, DeltaExactMatch: -0.125}}}
	for _, none := range []bool{false, true} {
		a.NoExactMatch = none
		var b strings.Builder
		p := &printer{w: &b}
		writeAblation(p, 200, a, len(a.Rows))
		out := b.String()
		for _, exact := range []string{"exact match 0.2500", "Δexact", "-0.1250"} {
			if strings.Contains(out, exact) == none {
				t.Errorf("no exact match %v: %q shown %v:\n%s", none, exact, !none, out)
			}
		}
		for _, want := range []string{"token acc 0.5000", "-0.1000", "on 1 repeated-tokens sequence of 100 tokens;"} {
			if !strings.Contains(out, want) {
				t.Errorf("no exact match %v: %q is missing:\n%s", none, want, out)
			}
		}
	}
}

// manyHeadsAblation is a table of GPT-2 small's 144 heads, most important
// first, with roles as long as the heads' table writes them.
func manyHeadsAblation() Ablation {
	a := Ablation{Mode: "zero", Replacement: "zeros", On: "the 256 held-out examples of the run", Loss: 3, TokenAcc: 0.4, ExactMatch: 0.1}
	for i := range 144 {
		a.Rows = append(a.Rows, AblationRow{Layer: i / 12, Head: i % 12, Role: "diffuse (best: previous-token 0.33)",
			Loss: 3 + float64(144-i)/1000, DeltaLoss: float64(144-i) / 1000})
	}
	return a
}

// TestSummaryShowsTheAblation: -summary's view (Summary) carries the
// ablation table when there is one: every head of a small model, the most
// important of a model of many heads with one line for the rest, every
// line within the width.
func TestSummaryShowsTheAblation(t *testing.T) {
	small := Ablation{Mode: "zero", Replacement: "zeros", On: "the 4 held-out examples of the run",
		Rows: []AblationRow{{Layer: 0, Head: 0, Role: "induction (0.97)", DeltaLoss: 1}, {Layer: 0, Head: 1, Role: "self (0.50)"}}}
	for _, c := range []struct {
		name  string
		a     Ablation
		rows  int
		after string
	}{
		{"2 heads", small, 2, ""},
		{"144 heads", manyHeadsAblation(), MaxHeadLines / 2, "the other 128 heads: Δloss from +0.0010 to +0.1280"},
	} {
		for _, width := range []int{60, 80, 120} {
			v := Inspect{Checkpoint: "m", Model: Model{Layers: 1, Heads: 2}, Task: "copy", Summary: true, Ablation: &c.a}
			var b strings.Builder
			if err := WriteInspect(&b, v, Plain, width); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			at := strings.Index(out, "ablation (zero)")
			if at < 0 {
				t.Fatalf("%s at %d columns: no ablation table in the summary:\n%s", c.name, width, out)
			}
			rows := 0
			for _, line := range strings.Split(out[at:], "\n") {
				if n := utf8.RuneCountInString(line); n > width-1 {
					t.Errorf("%s at %d columns: a line of %d:\n%s", c.name, width, n, line)
				}
				var l, h int
				if _, err := fmt.Sscanf(line, "%d %d", &l, &h); err == nil {
					rows++
				}
			}
			if rows != c.rows {
				t.Errorf("%s at %d columns: %d rows, want %d:\n%s", c.name, width, rows, c.rows, out[at:])
			}
			if !strings.Contains(strings.Join(strings.Fields(out[at:]), " "), c.after) {
				t.Errorf("%s at %d columns: no %q:\n%s", c.name, width, c.after, out[at:])
			}
		}
	}
}

// TestAblationRolesFitTheWidth: a role too long for the room left is cut
// with an ellipsis, and the full view lists every head.
func TestAblationRolesFitTheWidth(t *testing.T) {
	a := manyHeadsAblation()
	var b strings.Builder
	writeAblation(&printer{w: &b}, 72, a, len(a.Rows))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if n := strings.Count(b.String(), "diffuse (best"); n != 144 {
		t.Errorf("%d rows name the role, want 144", n)
	}
	if !strings.Contains(b.String(), "…") || strings.Contains(b.String(), "more heads") {
		t.Errorf("at 72 columns the roles are not cut, or heads are left out:\n%s", strings.Join(lines[:5], "\n"))
	}
	for _, line := range lines {
		if n := utf8.RuneCountInString(line); n > 71 {
			t.Errorf("a line of %d at 72 columns:\n%s", n, line)
		}
	}
}
