package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTitleWraps: a figure narrower than its title (one head on two
// tokens, as a short -text draws) wraps the title at spaces to its width,
// every word kept whole and in order, and the title block grows to hold the
// lines; a word wider than the figure is cut, not lost.
func TestTitleWraps(t *testing.T) {
	title := []string{"model /a/long/path/to/a/model: Hugging Face GPT2LMHeadModel, tokenizer GPT-2 byte-level BPE (50257 tokens)  (12 layers x 12 heads)",
		"heatmaps: tokens from -text; correct at scored positions: 1/1", FigureLegend}
	f := Figure{Title: title, Grid: [][]Panel{{markedPanel(0, []string{"hi", "there"})}}}
	_, l, err := Grid(f)
	if err != nil {
		t.Fatal(err)
	}
	width := (l.Size().X - 2*pad) / charW
	if len(l.title) <= len(title) {
		t.Fatalf("%d px wide, the title is %d lines: want it wrapped", l.Size().X, len(l.title))
	}
	for _, line := range l.title {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("title line %q is %d characters, the figure holds %d", line, n, width)
		}
	}
	if got, want := strings.Fields(strings.Join(l.title, " ")), strings.Fields(strings.Join(title, " ")); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the wrapped title reads %q, want the words of %q", got, want)
	}
	if want := pad + len(l.title)*(lineH+spacing); l.TitleH != want {
		t.Errorf("the title block is %d px for %d lines, want %d", l.TitleH, len(l.title), want)
	}
	if got := wrapLines([]string{"abcdefghij k"}, 4); strings.Join(got, "|") != "abcd|efgh|ij k" {
		t.Errorf("a word wider than the width wraps as %q, want abcd|efgh|ij k", got)
	}
}
