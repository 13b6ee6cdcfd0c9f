package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// thousandHeadsDir writes a random GPT-2 of 32 layers x 32 heads (the
// 1,024 of an 8B model) but d_model 32, so one-wide heads, a vocabulary
// of 16 and a context of 32: under 1 MB, and a forward in milliseconds.
func thousandHeadsDir(t *testing.T) string {
	t.Helper()
	dir := opentest.GPT2Dir(t, model.Config{Vocab: 16, Context: 32, DModel: 32, Heads: 32, Layers: 32, DFF: 32})
	info, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil || info.Size() > 4<<20 {
		t.Fatalf("the 1,024-head model's weights: %v, %d bytes; want at most 4 MiB", err, info.Size())
	}
	return dir
}

// Rows of the per-head tables: the circuits' (layer, head, prefix
// matching, ...) and the ablation's (layer, head, role, ...); a grid's
// block header and its row of layer 31.
var (
	headRow   = regexp.MustCompile(`(?m)^ +\d+ +\d+ +(\d\.\d{3} |diffuse)`)
	gridBlock = regexp.MustCompile(`\nlayer +h\d+ `)
	gridLast  = regexp.MustCompile(`\n   31 +[·a-z]`)
)

// TestThousandHeadsFitTheTerminal: a model of 1,024 heads (32 x 32) at 80
// and at 120 columns: no line of the default view or of -summary (with
// -circuits and -ablate) is wider than the terminal; the grid of heads
// comes in blocks of head columns, every layer in each, under a tally of
// the roles; -summary's per-head tables list 16 heads each and sum up the
// other 1,008 in a line; and -layer and -head with lists and ranges pick
// the heads the tables, and the per-head work, cover. Each view is built
// once and laid out at both widths, as inspect lays it out.
func TestThousandHeadsFitTheTerminal(t *testing.T) {
	dir := thousandHeadsDir(t)
	for _, c := range []struct {
		o       report.Options
		summary bool
		rows    int // the rows of the per-head tables
	}{
		{report.Options{}, false, 0},
		{report.Options{Circuits: true, Ablate: true}, true, 2 * 16},
		// the heads', the circuits' and the ablation's tables
		{report.Options{Circuits: true, Ablate: true, Layers: report.Only(0, 30, 31), Heads: report.Only(1, 2)}, true, 3 * 6},
	} {
		c.o.Checkpoint, c.o.Samples, c.o.Seed = dir, 2, 1
		r, err := buildReport(c.o)
		if err != nil {
			t.Fatal(err)
		}
		picked := !c.o.Layers.All && c.o.Layers.Only != nil
		for _, columns := range []int{80, 120} {
			var stdout bytes.Buffer
			if err := render.WriteInspect(&stdout, r.Text(c.summary), render.Plain, columns); err != nil {
				t.Fatal(err)
			}
			out, what := stdout.String(), fmt.Sprintf("-layer %q -head %q (summary %t) at %d columns", c.o.Layers, c.o.Heads, c.summary, columns)
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > columns {
					t.Errorf("%s: line %d is %d wide: %q", what, i+1, n, line)
				}
			}
			if n := len(headRow.FindAllString(out, -1)); n != c.rows {
				t.Errorf("%s: %d rows of per-head tables, want %d:\n%s", what, n, c.rows, out)
			}
			if c.rows == 2*16 && strings.Count(prose(out), "the other 1008 heads:") != 2 {
				t.Errorf("%s: the other 1,008 heads are not summed up in each table:\n%s", what, out)
			}
			if picked {
				if len(r.Ablation.Rows) != 6 || r.Circuits.Patching.Examples != 2 {
					t.Errorf("%s: %d heads ablated, patching on %d examples; want the 6 picked, on both", what, len(r.Ablation.Rows), r.Circuits.Patching.Examples)
				}
				continue
			}
			blocks := (32 + (columns-6)/4 - 1) / ((columns - 6) / 4) // "layer " then 4 columns a cell
			n, last := len(gridBlock.FindAllString(out, -1)), len(gridLast.FindAllString(out, -1))
			if strings.Count(out, "layer   h0 ") != 1 || n != blocks || last != blocks {
				t.Errorf("%s: a grid in %d blocks, layer 31 in %d; want one grid in %d blocks, layer 31 in each:\n%s", what, n, last, blocks, out)
			}
			if !regexp.MustCompile(`\n1024 heads: \d+ diffuse`).MatchString(out) {
				t.Errorf("%s: no tally of the 1,024 heads' roles:\n%s", what, out)
			}
		}
	}
}

// lazyPage is what the browser test measures of a page of many heads.
type lazyPage struct {
	Cells, Drawn, Tables, Places int // thumbnails, drawn ones, composition tables built, their places
	ScrollWidth, ViewportWidth   int
	Ready                        float64 // ms from navigation to the script's end
	LastDrawn, LastRows          int     // after scrolling: the last cell's canvas width, the last table's rows
}

// TestThousandHeadsPageInBrowser: the page of a model of 1,024 heads (32 x
// 32, with -circuits) opens in Chromium with every head a cell of the grid
// and no sideways scrolling, but draws only the thumbnails near the
// screen, and builds none of the 31 composition tables until it comes near
// (each of 1,024 cells); scrolling to the last cell draws it, and to the
// last table builds it (33 rows). Nothing is logged or fetched.
func TestThousandHeadsPageInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	dir := thousandHeadsDir(t)
	path := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", dir, "-examples", "2", "-circuits", "-html", path)
	bctx, events := openPage(t, chromium, path)
	var p lazyPage
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`(() => ({
			Cells: document.querySelectorAll("#grid .thumb").length,
			Drawn: Array.from(document.querySelectorAll("#grid .thumb canvas")).filter((c) => c.width !== 300).length,
			Tables: document.querySelectorAll("#circuits .composition table").length,
			Places: document.querySelectorAll("#circuits .composition").length,
			ScrollWidth: document.documentElement.scrollWidth, ViewportWidth: document.documentElement.clientWidth,
			Ready: performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd,
		}))()`, &p),
		chromedp.Evaluate(`document.querySelector("#grid .thumb:last-child").scrollIntoView()`, nil),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_ = chromedp.Poll(`document.querySelector("#grid .thumb:last-child canvas").width !== 300`, nil, chromedp.WithPollingTimeout(5*time.Second)).Do(ctx)
			return chromedp.Evaluate(`document.querySelector("#grid .thumb:last-child canvas").width`, &p.LastDrawn).Do(ctx)
		}),
		chromedp.Evaluate(`document.querySelector("#circuits .composition:last-of-type").scrollIntoView()`, nil),
		chromedp.ActionFunc(func(ctx context.Context) error {
			_ = chromedp.Poll(`document.querySelector("#circuits .composition:last-of-type table") !== null`, nil, chromedp.WithPollingTimeout(5*time.Second)).Do(ctx)
			return chromedp.Evaluate(`document.querySelectorAll("#circuits .composition:last-of-type tr").length`, &p.LastRows).Do(ctx)
		}),
	); err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", p)
	if p.Cells != 1024 || p.ScrollWidth > p.ViewportWidth {
		t.Errorf("%d cells in a page %d px wide in a %d px window; want 1,024 and no sideways scrolling", p.Cells, p.ScrollWidth, p.ViewportWidth)
	}
	if p.Drawn == 0 || p.Drawn > 1024/2 {
		t.Errorf("%d thumbnails drawn on opening, want those near the screen: some, and not half of 1,024", p.Drawn)
	}
	if p.Places != 31 || p.Tables > 2 {
		t.Errorf("%d composition tables built of %d places on opening, want 31 places and at most the 2 near the screen", p.Tables, p.Places)
	}
	if p.LastDrawn != 31 || p.LastRows != 33 {
		t.Errorf("after scrolling: the last cell %d px (want its 31 positions), the last table %d rows (want 33)", p.LastDrawn, p.LastRows)
	}
	events.check(t, path)
}

// TestLongSequenceThumbnailsInBrowser: past 32 positions the grid draws
// each head's thumbnail (htmlview.EncodeThumb), not its map: at 100
// tokens a cell is 25 x 25 pixels of 4 positions each, the top right one
// masked grey and the bottom left one not, while the head opened below
// still has a row and a column for every token.
func TestLongSequenceThumbnailsInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	dir := opentest.GPT2Dir(t, model.Config{Vocab: 16, Context: 128, DModel: 16, Heads: 2, Layers: 2, DFF: 16})
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = strconv.Itoa(i % 16)
	}
	path := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", dir, "-tokens", strings.Join(ids, " "), "-html", path)
	bctx, events := openPage(t, chromium, path)
	var got struct {
		Width      int
		Corner     []int // the top right pixel, then the bottom left one
		LargeCells int
	}
	if err := chromedp.Run(bctx, chromedp.Evaluate(`(() => {
		const c = document.querySelector("#grid .thumb canvas"), px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
		const at = (x, y) => Array.from(px.slice(4 * (y * c.width + x), 4 * (y * c.width + x) + 3));
		return {Width: c.width, Corner: at(c.width - 1, 0).concat(at(0, c.height - 1)),
			LargeCells: document.querySelectorAll("#large rect").length};
	})()`, &got)); err != nil {
		t.Fatal(err)
	}
	grey := []int{0xec, 0xee, 0xf2}
	if got.Width != 25 || len(got.Corner) != 6 || !slices.Equal(got.Corner[:3], grey) || slices.Equal(got.Corner[3:], grey) {
		t.Errorf("the first thumbnail is %d px wide with corners %v; want 25 px, the top right masked %v and the bottom left not", got.Width, got.Corner, grey)
	}
	if got.LargeCells < 100*101/2 {
		t.Errorf("the head opened below draws %d cells, want one a weight of 100 tokens (at least %d)", got.LargeCells, 100*101/2)
	}
	events.check(t, path)
}
