package main

import (
	"bytes"
	"encoding/json"
	"image"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// hostileCheckpoint saves an untrained model of the text task on a file
// whose characters are every hostile one (escapetest.Hostile), a space, a
// newline, a tab and two letters, and returns its path, the text file's
// and its vocabulary's labels in id order (textCheckpoint).
func hostileCheckpoint(t *testing.T) (ck, text string, labels []string) {
	t.Helper()
	return textCheckpoint(t, "ab \n\t"+string(escapetest.Hostile))
}

// textCheckpoint saves an untrained model of the text task on a file of
// chars repeated, its context the vocabulary's size, and returns its path,
// the text file's and its vocabulary's labels in id order: the characters
// themselves, "␣" for the space.
func textCheckpoint(t *testing.T, chars string) (ck, text string, labels []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(path, []byte(strings.Repeat(chars, 25)), 0o644); err != nil {
		t.Fatal(err)
	}
	file, vocab, err := data.RecordText(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range vocab {
		labels = append(labels, data.CharLabel(r))
	}
	n := len(labels)
	task := data.TaskConfig{Name: data.Text, Path: path, Length: n, Chars: vocab, File: file}
	return newCheckpoint(t, model.Config{Vocab: n, Context: n, DModel: 16, Heads: 2, Layers: 1}, task), path, labels
}

// everyID is -tokens for a sequence of each of n ids in turn, written as
// ids are on a text model: "#0 #1 ... #n-1".
func everyID(n int) string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "#" + strconv.Itoa(i)
	}
	return strings.Join(ids, " ")
}

// shownCells are labels as a terminal view shows them: escaped, cut to six
// columns (render's maxLabel).
func shownCells(labels []string) []string {
	out := make([]string, len(labels))
	for i, l := range labels {
		r := []rune(escape.Label(l))
		out[i] = string(r[:min(6, len(r))])
	}
	return out
}

// fieldsAfter is the words of the line after the first line starting with
// prefix, or of that line itself (without the prefix) when next is false.
func fieldsAfter(t *testing.T, out []byte, prefix string, next bool) []string {
	t.Helper()
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		if next && i+1 < len(lines) {
			return strings.Fields(lines[i+1])
		}
		return strings.Fields(strings.TrimPrefix(l, prefix))
	}
	t.Fatalf("no line starts with %q in\n%s", prefix, out)
	return nil
}

// escapedFigure is f with every string escaped by the test, as the PNG
// must draw it.
func escapedFigure(f render.Figure) render.Figure {
	f.Title = escape.Labels(f.Title)
	grid := make([][]render.Panel, len(f.Grid))
	for l, row := range f.Grid {
		for _, p := range row {
			p.Title = escape.Label(p.Title)
			p.Rows, p.Cols, p.Notes, p.Predicted = escape.Labels(p.Rows), escape.Labels(p.Cols), escape.Labels(p.Notes), escape.Labels(p.Predicted)
			grid[l] = append(grid[l], p)
		}
	}
	f.Grid = grid
	return f
}

// TestHostileVocabulary: a text model whose vocabulary holds C0, DEL, C1,
// bidi and format characters, shown on a sequence of every token, in every
// output form: no form writes one of them raw (a text form's newlines, and
// the page's tabs, lay it out); the text views show each token's escape in
// its place in the token row and on the heatmap axes; -json and the page's
// data decode back to the real characters; the PNG is the drawing of the
// escaped labels; the -tokens error lists the names escaped.
func TestHostileVocabulary(t *testing.T) {
	plainEnv(t, "400")
	ck, text, labels := hostileCheckpoint(t)
	tokens := everyID(len(labels))
	cells := shownCells(labels)
	if cells[slices.Index(labels, "\u202e")] != `\u202e` || cells[slices.Index(labels, "\x1b")] != `\x1b` {
		t.Fatalf("the test's own escapes are wrong: %q", cells)
	}
	dir := t.TempDir()
	pngPath, htmlPath := filepath.Join(dir, "heads.png"), filepath.Join(dir, "page.html")
	type output struct {
		stdout, file []byte
		err          error
	}
	for _, c := range []struct {
		name   string
		args   []string
		file   string // the file the form writes, "" for none
		binary bool   // the file is an image, checked by its pixels only
		layout string // characters the form lays itself out with
		check  func(t *testing.T, out output)
	}{
		{name: "text view", layout: "\n", check: func(t *testing.T, out output) {
			if got := fieldsAfter(t, out.stdout, "token ", false); !slices.Equal(got, cells) {
				t.Errorf("token row %q, want %q", got, cells)
			}
			if got, want := fieldsAfter(t, out.stdout, "layer 0 head 0", true), append(slices.Clone(cells), cells...); !slices.Equal(got, want) {
				t.Errorf("key axis of the two heads %q, want %q", got, want)
			}
		}},
		{name: "-summary", args: []string{"-summary"}, layout: "\n"},
		{name: "-circuits", args: []string{"-circuits", "-summary", "-data", text}, layout: "\n", check: func(t *testing.T, out output) {
			if !strings.Contains(string(out.stdout), "raise most directly") {
				t.Errorf("-circuits names no tokens the heads raise:\n%s", out.stdout)
			}
		}},
		{name: "-layer -head", args: []string{"-layer", "0", "-head", "1"}, layout: "\n", check: func(t *testing.T, out output) {
			if got := fieldsAfter(t, out.stdout, "layer 0 head 1", true); !slices.Equal(got, cells) {
				t.Errorf("key axis %q, want %q", got, cells)
			}
		}},
		{name: "-json", args: []string{"-json"}, layout: "\n", check: func(t *testing.T, out output) {
			if got := decode(t, out.stdout).Labels; !slices.Equal(got, labels) {
				t.Errorf("-json labels %q, want the real characters %q", got, labels)
			}
			if !bytes.Contains(out.stdout, []byte(`\u202e`)) || !bytes.Contains(out.stdout, []byte(`\u009b`)) {
				t.Error("-json does not write the override and the 8-bit CSI as \\u escapes")
			}
		}},
		{name: "-png", args: []string{"-png", pngPath}, file: pngPath, binary: true, layout: "\n", check: func(t *testing.T, out output) {
			r, err := buildReport(report.Options{Checkpoint: ck, Tokens: tokens, Layers: report.Every, Heads: report.Every, Samples: 64, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			fig := r.Figure()
			if got := fig.Grid[0][0].Cols; !slices.Equal(got, labels) {
				t.Fatalf("the figure's labels are %q, want the real characters", got)
			}
			want, _, err := render.Grid(escapedFigure(fig))
			if err != nil {
				t.Fatal(err)
			}
			got := readPNG(t, pngPath)
			if got.Bounds() != want.Bounds() {
				t.Fatalf("the PNG is %v, the drawing of the escaped labels %v", got.Bounds(), want.Bounds())
			}
			for y := range want.Bounds().Dy() {
				for x := range want.Bounds().Dx() {
					if p := image.Pt(x, y); rgba(got, p) != want.RGBAAt(x, y) {
						t.Fatalf("the PNG differs from the drawing of the escaped labels at %v", p)
					}
				}
			}
		}},
		{name: "-html", args: []string{"-html", htmlPath, "-data", text}, file: htmlPath, layout: "\n\t", check: func(t *testing.T, out output) {
			var page struct {
				Inspect struct {
					Labels []string `json:"labels"`
				} `json:"inspect"`
				ShownLabels [][]string `json:"shown_labels"`
			}
			if err := json.Unmarshal(blob(t, out.file), &page); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(page.Inspect.Labels, labels) {
				t.Errorf("the page's labels %q, want the real characters %q", page.Inspect.Labels, labels)
			}
			if len(page.ShownLabels) == 0 || !slices.Equal(shownCells(page.ShownLabels[0]), cells) || !slices.Contains(page.ShownLabels[0], `\u202e`) {
				t.Errorf("the page shows the labels as %q, want their escapes", page.ShownLabels)
			}
		}},
		{name: "-tokens error", args: []string{"-tokens", "zz"}, check: func(t *testing.T, out output) {
			if out.err == nil {
				t.Fatal("an unknown token name was accepted")
			}
			for _, want := range []string{`"zz"`, `\x1b`, `\u009b`, `\u202e`, `\ufeff`} {
				if !strings.Contains(out.err.Error(), want) {
					t.Errorf("the error %q lacks %s", out.err, want)
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(append([]string{"-checkpoint", ck, "-tokens", tokens, "-color", "never"}, c.args...), &stdout, &stderr)
			out := output{stdout: stdout.Bytes(), err: err}
			if err != nil && c.name != "-tokens error" {
				t.Fatal(err)
			}
			if c.file != "" {
				if out.file, err = os.ReadFile(c.file); err != nil {
					t.Fatal(err)
				}
			}
			escapetest.Check(t, "stdout", out.stdout, c.layout)
			escapetest.Check(t, "stderr", stderr.Bytes(), "\n")
			if out.err != nil {
				escapetest.Check(t, "the error", []byte(out.err.Error()), "")
			}
			if c.file != "" && !c.binary {
				escapetest.Check(t, c.file, out.file, c.layout)
			}
			if c.check != nil {
				c.check(t, out)
			}
		})
	}
}

// TestHostilePageInBrowser: the -html page of the hostile text model, as a
// browser draws it, shows every label as its escape (the large view's
// axes, the predictions table's token row, the head view's token lists),
// and none of the page's text holds a hostile character.
func TestHostilePageInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	ck, textFile, labels := hostileCheckpoint(t)
	path := filepath.Join(t.TempDir(), "page.html")
	var stdout, stderr bytes.Buffer
	if err := run([]string{"-checkpoint", ck, "-tokens", everyID(len(labels)), "-html", path, "-data", textFile}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	escapetest.Check(t, "stderr", stderr.Bytes(), "\n")
	bctx, events := openPage(t, chromium, path)
	var keyAxis, queryAxis, tokenRow, headView []string
	var text string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#large text[data-axis="key"]')).map((e) => e.textContent)`, &keyAxis),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#large text[data-axis="query"]')).map((e) => e.textContent)`, &queryAxis),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#predictions tr")[1].querySelectorAll("td")).map((c) => c.textContent)`, &tokenRow),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#lines text[data-q]")).map((e) => e.textContent)`, &headView),
		chromedp.Evaluate(`document.body.innerText`, &text),
	); err != nil {
		t.Fatal(err)
	}
	want := make([]string, len(labels))
	for i, l := range labels {
		want[i] = escape.Label(l)
	}
	for name, got := range map[string][]string{"key axis": keyAxis, "query axis": queryAxis, "token row": tokenRow} {
		if !slices.Equal(got, want) {
			t.Errorf("the page's %s reads %q, want %q", name, got, want)
		}
	}
	for i, got := range headView {
		if w := strconv.Itoa(i) + " · " + want[i]; got != w {
			t.Errorf("the head view's token %d reads %q, want %q", i, got, w)
		}
	}
	if len(headView) != len(want) {
		t.Errorf("the head view lists %d tokens, want %d", len(headView), len(want))
	}
	escapetest.Check(t, "the page's text", []byte(text), "\n\t")
	events.check(t, path)
}
