package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// manyHeadsDir writes a random model of GPT-2 small's 12 layers x 12 heads
// (but d_model 24 and a vocabulary of 16, so it opens and runs at once) as
// a Hugging Face directory without tokenizer files: it reads token ids.
func manyHeadsDir(t *testing.T) string {
	t.Helper()
	cfg := model.Config{Vocab: 16, Context: 32, DModel: 24, Heads: 12, Layers: 12,
		MLP: true, DFF: 48, QKVBias: true, OutBias: true, TieEmbeddings: true}
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gpt2-12x12")
	if err := hf.SaveGPT2(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
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
	runNoted(t, "-checkpoint", dir, "-tokens", tokens, "-examples", "2", "-html", path)
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
