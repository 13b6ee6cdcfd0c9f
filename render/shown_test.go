package render

import (
	"bytes"
	"image"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/escape/escapetest"
)

// hostileLabels are one-character labels of every class a terminal acts on
// or a renderer reorders, each with the visible escape a view shows for it
// (cut to maxLabel: a character above U+FFFF shows the start of its escape).
var hostileLabels = []struct{ class, label, shown string }{
	{"ESC", "\x1b", `\x1b`},
	{"BEL", "\a", `\x07`},
	{"CR", "\r", `\x0d`},
	{"BS", "\b", `\x08`},
	{"DEL", "\x7f", `\x7f`},
	{"8-bit CSI", "\u009b", `\u009b`},
	{"8-bit OSC", "\u009d", `\u009d`},
	{"DCS", "\u0090", `\u0090`},
	{"NEL", "\u0085", `\u0085`},
	{"right-to-left override", "\u202e", `\u202e`},
	{"left-to-right isolate", "\u2066", `\u2066`},
	{"right-to-left mark", "\u200f", `\u200f`},
	{"zero-width space", "\u200b", `\u200b`},
	{"byte-order mark", "\ufeff", `\ufeff`},
	{"line separator", "\u2028", `\u2028`},
	{"tag character", "\U000e0041", `\U000e`},
	{"newline", "\n", `\n`},
	{"tab", "\t", `\t`},
	{"invalid UTF-8", "\xff", `\xff`},
}

// labelPanel is the fixture's previous-token head with label as the text of
// position 2 on both axes, the prediction there, and in the title and notes.
func labelPanel(label string) Panel {
	p := fixture()[0]
	p.Rows = []string{"3", "1", label, "1", "4"}
	p.Cols = p.Rows
	p.Predicted = p.Rows
	p.Title, p.Notes = "head "+label, []string{"note " + label}
	return p
}

// TestViewsEscapeLabels: for a label of each class, the terminal heatmap,
// table and circuits' top tokens hold no unsafe character, show the label's escape where the
// label was, and align as if given the escaped text; every PNG view (a
// figure, a score table, a chart) draws exactly what it draws for the
// escaped text.
func TestViewsEscapeLabels(t *testing.T) {
	text := map[string]func(label string) (string, error){
		"heatmap": func(label string) (string, error) {
			var b bytes.Buffer
			err := Terminal(&b, []Panel{labelPanel(label)}, Plain, 0)
			return b.String(), err
		},
		"table": func(label string) (string, error) {
			var b bytes.Buffer
			err := Table(&b, []Row{{"token", []string{label, "a"}}, {"target " + label, []string{"b", label}}}, 0)
			return b.String(), err
		},
		// -circuits' list of the tokens the heads raise most (issue 42: a
		// byte-level vocabulary's control-byte tokens reached it raw).
		"circuits' top tokens": func(label string) (string, error) {
			var b bytes.Buffer
			p := &printer{w: &b}
			writeCircuits(p, 100, Circuits{DirectLogit: &DirectLogit{Raises: []HeadTokens{{Layer: 0, Head: 1, Tokens: []string{label, "a"}}}}}, 4, 1, false, 0)
			return b.String(), p.err
		},
	}
	images := map[string]func(label string) (*image.RGBA, error){
		"figure": func(label string) (*image.RGBA, error) {
			img, _, err := Grid(Figure{Title: []string{"title " + label}, Grid: [][]Panel{{labelPanel(label)}}})
			return img, err
		},
		"scores": func(label string) (*image.RGBA, error) {
			return Scores(ScoreTable{Title: []string{label}, Rows: []string{label}, Columns: []ScoreColumn{{Name: label, Hi: 1}}, Values: [][]float64{{0.5}}})
		},
		"chart": func(label string) (*image.RGBA, error) {
			img, _, err := Chart([]string{label}, label, 0, 1, []ChartPanel{{Title: label, YMax: 1, Series: []Series{{Name: label, X: []float64{0, 1}, Y: []float64{0, 1}}}}})
			return img, err
		},
	}
	for _, c := range hostileLabels {
		for name, view := range text {
			got, err := view(c.label)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, c.class, err)
			}
			escapetest.Check(t, name+", "+c.class, []byte(got), "\n")
			if !strings.Contains(got, c.shown) {
				t.Errorf("%s, %s: no %s in\n%s", name, c.class, c.shown, got)
			}
			if want, _ := view(escape.Label(c.label)); got != want {
				t.Errorf("%s, %s: laid out unlike its escaped text:\n%s\nwant\n%s", name, c.class, got, want)
			}
		}
		for name, view := range images {
			got, err := view(c.label)
			if err != nil {
				t.Fatalf("%s, %s: %v", name, c.class, err)
			}
			want, _ := view(escape.Label(c.label))
			if got.Bounds() != want.Bounds() || !bytes.Equal(got.Pix, want.Pix) {
				t.Errorf("%s, %s: the image is not the one of the escaped text", name, c.class)
			}
		}
	}
}

// TestTableAlignsEscapedCells: a cell's escape is as wide as it prints, so
// the columns of a table stay aligned when one row holds an escaped label.
func TestTableAlignsEscapedCells(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, []Row{{"token", []string{"\u202e", "a"}}, {"pred", []string{"b", "\u202e"}}}, 0); err != nil {
		t.Fatal(err)
	}
	want := "token  \\u202e      a\n" +
		"pred        b \\u202e\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestTableCountsWideCharacters: an East Asian wide character takes two
// columns of a terminal and a combining mark none, so a table of Japanese
// tokens wraps to the width it is given, its columns stay aligned, and a
// label is cut at maxLabel columns, not characters.
func TestTableCountsWideCharacters(t *testing.T) {
	tokens := strings.Split("日本 語の 文章 です 。 日本 語の 文章 です 。 é é", " ")
	tokens[len(tokens)-1] = "e\u0301" // e and a combining acute: one column
	var b bytes.Buffer
	if err := Table(&b, []Row{{"token", tokens}, {"pred", tokens}}, 30); err != nil {
		t.Fatal(err)
	}
	// columns counts by hand what a terminal shows of these tokens: the
	// kana, kanji and 。 (U+3000-U+9FFF) two columns, U+0301 none.
	columns := func(s string) int {
		n := 0
		for _, r := range s {
			switch {
			case r >= 0x3000 && r <= 0x9fff:
				n += 2
			case r != 0x301:
				n++
			}
		}
		return n
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	for _, l := range lines {
		if w := columns(l); w > 30 {
			t.Errorf("a line of %d columns, over 30: %q", w, l)
		}
	}
	for i := 0; i+1 < len(lines); i += 3 {
		if columns(lines[i]) != columns(lines[i+1]) {
			t.Errorf("rows not aligned:\n%s\n%s", lines[i], lines[i+1])
		}
	}
	if got := cut("日本語の文章です"); got != "日本語" {
		t.Errorf("cut of 16 columns = %q, want the 6 columns 日本語", got)
	}
	if got := visibleWidth("e\u0301。"); got != 3 {
		t.Errorf("e + combining acute + 。 = %d columns, want 3", got)
	}
}
