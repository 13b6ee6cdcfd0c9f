package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// manyHeadsDir writes a random model of GPT-2 small's 12 layers x 12 heads
// (but d_model 24 and a vocabulary of 16, so it opens and runs at once) as
// a Hugging Face directory without tokenizer files: it reads token ids.
func manyHeadsDir(t *testing.T) string {
	return opentest.GPT2Dir(t, model.Config{Vocab: 16, Context: 32, DModel: 24, Heads: 12, Layers: 12, DFF: 48})
}

// gridBoxes is what the browser test measures of the page's head grid.
type gridBoxes struct {
	ViewportWidth, ScrollWidth int
	Cells                      []struct {
		Layer, Head                string
		Left, Right, Width, Canvas float64
	}
	Drawn, LastDrawn int // canvas widths, in pixels of the map: T once drawn
}

// TestManyHeadsPageInBrowser: the page of a model of 144 heads (12 x 12)
// at a 1,400 px wide window shows every head's cell side by side, each
// inside the window and wide enough to see (its map at least 40 px), and
// the page does not scroll sideways; a cell's map is drawn once it is on
// screen (the first at once, the last after scrolling to it). The page's
// title names the model trained elsewhere and gives no step.
func TestManyHeadsPageInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	dir, tokens := manyHeadsDir(t), "1 2 3 4 5 6 7 8 1 2 3 4 5 6 7 8"
	path := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", dir, "-tokens", tokens, "-examples", "2", "-circuits", "-ablate", "-html", path)
	bctx, events := openPage(t, chromium, path)
	var g gridBoxes
	var title, heading string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`(() => {
			const cells = Array.from(document.querySelectorAll("#grid .thumb")).map((f) => {
				const r = f.getBoundingClientRect();
				return {Layer: f.dataset.layer, Head: f.dataset.head, Left: r.left, Right: r.right, Width: r.width,
					Canvas: f.querySelector("canvas").getBoundingClientRect().width};
			});
			return {ViewportWidth: document.documentElement.clientWidth, ScrollWidth: document.documentElement.scrollWidth,
				Cells: cells, Drawn: document.querySelector("#grid .thumb canvas").width};
		})()`, &g),
		chromedp.Evaluate(`(() => { const c = document.querySelectorAll("#grid .thumb"); c[c.length - 1].scrollIntoView(); })()`, nil),
		// Drawing waits for the IntersectionObserver: poll until the
		// canvas leaves its default size (300), or give up after 5 s.
		chromedp.ActionFunc(func(ctx context.Context) error {
			_ = chromedp.Poll(`document.querySelector("#grid .thumb:last-child canvas").width !== 300`, nil, chromedp.WithPollingTimeout(5*time.Second)).Do(ctx)
			return chromedp.Evaluate(`document.querySelector("#grid .thumb:last-child canvas").width`, &g.LastDrawn).Do(ctx)
		}),
		chromedp.Text("header h1", &title, chromedp.ByQuery),
		chromedp.Text("#title-sub", &heading, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if g.ViewportWidth < 1350 || g.ViewportWidth > 1400 {
		t.Fatalf("the window is %d px wide, want about 1,400", g.ViewportWidth)
	}
	if g.ScrollWidth > g.ViewportWidth {
		t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", g.ScrollWidth, g.ViewportWidth)
	}
	if len(g.Cells) != 144 {
		t.Fatalf("the grid has %d cells, want 144", len(g.Cells))
	}
	for i, c := range g.Cells {
		if want := fmt.Sprint(i/12, i%12); c.Layer+" "+c.Head != want {
			t.Errorf("cell %d is layer %s head %s, want %s", i, c.Layer, c.Head, want)
		}
		if c.Left < 0 || c.Right > float64(g.ViewportWidth) || c.Canvas < 40 {
			t.Errorf("layer %s head %s spans %.0f-%.0f px of %d, its map %.0f px wide: want it inside the window and at least 40 px",
				c.Layer, c.Head, c.Left, c.Right, g.ViewportWidth, c.Canvas)
		}
	}
	if n := len(strings.Fields(tokens)); g.Drawn != n || g.LastDrawn != n {
		t.Errorf("the first cell's map is %d px, the last's after scrolling to it %d, want both drawn at %d", g.Drawn, g.LastDrawn, n)
	}
	if want := "attnscope · Hugging Face GPT2LMHeadModel"; title != want || strings.Contains(title+heading, "step") {
		t.Errorf("the page's title is %q over %q, want %q and no step", title, heading, want)
	}
	events.check(t, path)
}

// terminalAndPage runs inspect with args for the terminal (plain, on a
// terminal 1,000 columns wide, so the predictions' table is one block)
// and for the -html page; it returns the terminal's lines and the page.
func terminalAndPage(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	t.Setenv("COLUMNS", "1000")
	path := filepath.Join(t.TempDir(), "page.html")
	var outputs []string
	for _, a := range [][]string{append(args, "-color", "never"), append(args, "-html", path)} {
		var stdout, stderr bytes.Buffer
		if err := run(a, &stdout, &stderr); err != nil {
			t.Fatalf("run %q: %v", a, err)
		}
		outputs = append(outputs, stdout.String())
	}
	return strings.Split(outputs[0], "\n"), path
}

// terminalRow is the cells of the terminal's row named name ("predicted").
func terminalRow(t *testing.T, lines []string, name string) []string {
	t.Helper()
	for _, line := range lines {
		if f := strings.Fields(line); len(f) > 0 && f[0] == name {
			return f[1:]
		}
	}
	t.Fatalf("the terminal view has no %q row", name)
	return nil
}

// terminalLine is the terminal's line starting with prefix, prefix cut.
func terminalLine(t *testing.T, lines []string, prefix string) string {
	t.Helper()
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return rest
		}
	}
	t.Fatalf("the terminal view has no line starting %q", prefix)
	return ""
}

// TestPageWordsAreTheTerminals: the page says what the terminal says, as a
// browser shows it. Under its title the terminal's first line (a model
// trained elsewhere named by its source and path, no step; the lab's
// checkpoint by its step); the "blocks" row the terminal's blocks (a
// Llama's pre-RMSNorm and SwiGLU, not "pre-LN"); the roles' note the
// terminal's (on -text: scored on the text given, at every position); the
// "predicted" row the terminal's labels, not token ids (on "aaaaaaaa" a
// 4-token model predicts tokens the text does not hold).
func TestPageWordsAreTheTerminals(t *testing.T) {
	chromium := tooltest.Chromium(t)
	for _, c := range []struct {
		name, title string
		args        []string
	}{
		{"-text", "attnscope · Hugging Face GPT2LMHeadModel", []string{"-checkpoint", opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles), "-text", "aaaaaaaa"}},
		{"Llama", "attnscope · Hugging Face LlamaForCausalLM", []string{"-checkpoint", filepath.Join("..", "..", "open", "hf", "testdata", "llama"), "-tokens", llamaTokens, "-examples", "2"}},
		{"lab checkpoint", "attnscope · copy · step ", []string{"-checkpoint", testCheckpoint, "-examples", "2"}},
	} {
		lines, path := terminalAndPage(t, c.args...)
		bctx, events := openPage(t, chromium, path)
		var page struct {
			Title, Heading, Blocks, Roles string
			Predicted                     []string
		}
		if err := chromedp.Run(bctx, chromedp.Evaluate(`(() => {
			const dd = Array.from(document.querySelectorAll("#model-card dt")).find((dt) => dt.textContent === "blocks").nextElementSibling;
			const row = Array.from(document.querySelectorAll("#predictions tr")).find((r) => r.cells[0].textContent === "predicted");
			return {Title: document.querySelector("header h1").textContent, Heading: document.getElementById("title-sub").textContent,
				Blocks: dd.textContent, Roles: document.getElementById("roles-note").textContent,
				Predicted: Array.from(row.querySelectorAll("td")).map((td) => td.textContent.replace(/ [✓✗]$/, ""))};
		})()`, &page)); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(page.Title, c.title) || page.Heading != lines[0] {
			t.Errorf("%s: the page's title is %q over %q; want %q... over the terminal's first line %q", c.name, page.Title, page.Heading, c.title, lines[0])
		}
		if model := terminalLine(t, lines, "model: "); page.Blocks == "" || !strings.Contains(model, strings.SplitN(page.Blocks, " (d_ff", 2)[0]) {
			t.Errorf("%s: the page's blocks are %q, the terminal's model %q", c.name, page.Blocks, model)
		}
		// The page writes the terminal's note (one line at 1,000 columns) as a sentence.
		roles := terminalLine(t, lines, "heads: roles ")
		if note := strings.TrimSuffix(strings.TrimPrefix(page.Roles, "Click a head to open it below. Roles "), "."); note != roles {
			t.Errorf("%s: the page's roles note is %q, the terminal's %q", c.name, page.Roles, roles)
		}
		if want := terminalRow(t, lines, "predicted"); !slices.Equal(page.Predicted, want) {
			t.Errorf("%s: the page's predictions are %q, the terminal's %q", c.name, page.Predicted, want)
		}
		events.check(t, path)
	}
}
