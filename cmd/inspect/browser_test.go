package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/chromedp/cdproto/input"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/runlog"
)

// profileDir is a fresh Chromium profile directory, removed after the test.
// Chromium's helper processes can outlive the browser by a moment and still
// write there, so removal is retried for a few seconds (t.TempDir would fail
// the test instead).
func profileDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "attnscope-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove the Chromium profile %s", dir)
	})
	return dir
}

// pageEvents collects what the page must not do: log an error, throw, or
// request anything but its own file.
type pageEvents struct {
	mu       sync.Mutex
	errors   []string
	requests []string
}

func (p *pageEvents) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeWarning || ev.Type == runtime.APITypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.errors = append(p.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		p.errors = append(p.errors, "exception: "+ev.ExceptionDetails.Error())
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.LevelError || ev.Entry.Level == cdplog.LevelWarning {
			p.errors = append(p.errors, fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
		}
	case *network.EventRequestWillBeSent:
		p.requests = append(p.requests, ev.Request.URL)
	}
}

// check reports what the page at path must not have done: log an error,
// throw, or request anything but its own file.
func (p *pageEvents) check(t *testing.T, path string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.errors {
		t.Errorf("the page logged %s", e)
	}
	for _, r := range p.requests {
		if r != "file://"+path {
			t.Errorf("the page requested %s", r)
		}
	}
	if len(p.requests) == 0 {
		t.Error("saw no request at all, not even the page's own: the network listener is not working")
	}
}

// openPage opens the page at path in a headless chromium (from browser)
// and waits until its script has drawn it; the browser closes when the
// test ends.
func openPage(t *testing.T, chromium, path string) (context.Context, *pageEvents) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(profileDir(t)), chromedp.WindowSize(1400, 1000),
		chromedp.Flag("disable-breakpad", true), chromedp.Flag("disable-crash-reporter", true),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancel() })
	events := &pageEvents{}
	chromedp.ListenTarget(bctx, events.listen)
	if err := chromedp.Run(bctx, network.Enable(), cdplog.Enable(), chromedp.Navigate("file://"+path),
		chromedp.WaitVisible(`body[data-ready="1"]`, chromedp.ByQuery)); err != nil {
		t.Fatal(err)
	}
	return bctx, events
}

// point is a viewport position.
type point struct{ X, Y float64 }

// centre scrolls the first element matching selector into view and returns
// its centre in viewport coordinates.
func centre(selector string, p *point) chromedp.Action {
	return chromedp.Evaluate(fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		e.scrollIntoView({block: "center", inline: "center"});
		const r = e.getBoundingClientRect();
		return {X: r.left + r.width / 2, Y: r.top + r.height / 2};
	})()`, selector), p)
}

// hover moves the mouse onto the element as a person would.
func hover(selector string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var p point
		if err := centre(selector, &p).Do(ctx); err != nil {
			return err
		}
		return chromedp.MouseEvent(input.MouseMoved, p.X, p.Y).Do(ctx)
	})
}

// TestHTMLInBrowser opens the -html page of the test checkpoint (in a run
// directory) in headless Chromium and uses it as a person would: the page
// logs no error and requests nothing but itself; the grid has every layer x
// head labelled with its role and score; the graph summary, the training
// curves, the head roles through training and the ablation table (-ablate)
// are drawn, and a click on a row of either table opens that head; clicking
// a thumbnail opens that head large, its axes labelled with the tokens,
// beside a colour scale; hovering a cell shows the query, the key and the
// weight to 3 decimals as in the page's data; hovering a query in the head
// view highlights exactly its lines; the example selector redraws the
// heatmap with that example's weights and shows its predictions against its
// targets. A full-page screenshot goes to the test's artifact directory (go
// test -run InBrowser -artifacts ./cmd/inspect/ keeps it).
func TestHTMLInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	start := time.Now()
	path := filepath.Join(t.TempDir(), "page.html")
	runOK(t, "-checkpoint", runDirWithCheckpoint(t), "-examples", "4", "-ablate", "-circuits", "-html", path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Inspect  pageExample `json:"inspect"`
		Maps     [][]string  `json:"maps"`
		Examples []pageExample
		Graph    struct{ Rows []any }
		Training struct {
			Eval  []any
			Heads [][]runlog.HeadHistory
		}
	}
	if err := json.Unmarshal(blob(t, raw), &d); err != nil {
		t.Fatal(err)
	}
	d.Inspect.Maps = d.Maps
	d.Inspect.decodeMaps(t)
	for i := range d.Examples {
		d.Examples[i].decodeMaps(t)
	}
	layers, heads, T := len(d.Inspect.Attention), len(d.Inspect.Attention[0]), len(d.Inspect.Tokens)
	var circuits struct {
		Inspect struct {
			Circuits struct {
				Prefix [][]float64 `json:"prefix_matching"`
			} `json:"circuits"`
		} `json:"inspect"`
	}
	if err := json.Unmarshal(blob(t, raw), &circuits); err != nil {
		t.Fatal(err)
	}

	bctx, events := openPage(t, chromium, path)
	var thumbs int
	var roles, captions []string
	var gap float64
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`document.querySelectorAll("#grid .thumb").length`, &thumbs),
		chromedp.Evaluate(`document.querySelector("#grid .thumb").getBoundingClientRect().left - document.getElementById("grid").getBoundingClientRect().left`, &gap),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid .thumb")).map((f) => f.dataset.layer + "," + f.dataset.head + " " + f.querySelector(".role").className)`, &roles),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid .thumb figcaption")).map((c) => c.innerText)`, &captions),
	); err != nil {
		t.Fatal(err)
	}
	var graphRows, evalDots int
	var trainingHidden bool
	var graphTitle string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`document.querySelectorAll("#graph-table tr").length - 1`, &graphRows),
		chromedp.Evaluate(`document.getElementById("graph-title").textContent`, &graphTitle),
		chromedp.Evaluate(`document.getElementById("training").hidden`, &trainingHidden),
		chromedp.Evaluate(`document.querySelectorAll("#acc-chart circle").length`, &evalDots),
	); err != nil {
		t.Fatal(err)
	}
	// Two accuracy curves, a dot per evaluation line of the run's metrics.
	if trainingHidden || evalDots != 2*len(d.Training.Eval) || evalDots == 0 {
		t.Errorf("training section hidden %v with %d accuracy dots, want 2 x %d evaluations", trainingHidden, evalDots, len(d.Training.Eval))
	}
	if graphRows != len(d.Graph.Rows) || graphRows == 0 {
		t.Errorf("the graph table has %d rows, the summary %d", graphRows, len(d.Graph.Rows))
	}
	// The summary is the scoring run's graph: the 4 examples at their length.
	if want := fmt.Sprintf(" path, batch 4, length %d): ", T); !strings.Contains(graphTitle, want) {
		t.Errorf("the graph's title %q, want it to say %q", graphTitle, want)
	}
	if thumbs != layers*heads {
		t.Errorf("the grid shows %d heads, want %d x %d", thumbs, layers, heads)
	}
	// A grid of few heads keeps its cells beside the layer labels, at its left.
	if gap < 0 || gap > 48 {
		t.Errorf("the first head's cell is %.0f px right of the grid's left edge, want at most 48 (the layer labels' column)", gap)
	}
	for i, r := range roles {
		l, h := i/heads, i%heads
		if want := fmt.Sprintf("%d,%d role role-%s", l, h, d.Inspect.Heads[l][h].Role); r != want {
			t.Errorf("thumbnail %d is %q, want %q", i, r, want)
		}
		if want := fmt.Sprintf("L%d H%d\n%s", l, h, d.Inspect.Heads[l][h].caption()); i < len(captions) && captions[i] != want {
			t.Errorf("thumbnail %d is labelled %q, want %q", i, captions[i], want)
		}
	}

	// The head roles through training: a row per head with its role, the
	// step it formed and a dot per evaluation; clicking a row opens it.
	var roleRows []string
	var dots []int
	var openedFromRoles string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#roles-table tr[data-layer]")).map((r) => Array.from(r.cells).slice(0, 3).map((c) => c.textContent).join(" "))`, &roleRows),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#roles-table tr[data-layer]")).map((r) => r.querySelectorAll("circle").length)`, &dots),
		chromedp.Click(`#roles-table tr[data-layer]:last-child`, chromedp.ByQuery),
		chromedp.Text("#focus-title", &openedFromRoles, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	var wantRows []string
	for _, layer := range d.Training.Heads {
		for _, hist := range layer {
			formed := "never"
			if hist.Formed != nil {
				formed = strconv.Itoa(*hist.Formed)
			}
			role := string(hist.Role)
			if last := hist.Scores[len(hist.Scores)-1]; last < 0.4 {
				role = fmt.Sprintf("diffuse (best: %s %.2f)", hist.Role, last)
			}
			wantRows = append(wantRows, fmt.Sprintf("L%d H%d %s %s", hist.Layer, hist.Head, role, formed))
			if i := len(wantRows) - 1; i < len(dots) && dots[i] != len(d.Training.Eval) {
				t.Errorf("head roles row %d has %d dots, want one per evaluation (%d)", i, dots[i], len(d.Training.Eval))
			}
		}
	}
	if len(wantRows) != layers*heads || !slices.Equal(roleRows, wantRows) {
		t.Errorf("the head roles through training read %q, want %q", roleRows, wantRows)
	}
	if want := fmt.Sprintf("Layer %d, head %d", layers-1, heads-1); openedFromRoles != want {
		t.Errorf("clicking the last head roles row opened %q, want %q", openedFromRoles, want)
	}

	// The circuits table has a row per head whose prefix-matching cell is
	// the JSON's number; clicking its first row opens that head.
	var circuitRows []string
	var openedFromCircuits string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#circuits-heads tr[data-layer]")).map((r) => r.cells[0].textContent + "," + r.cells[1].textContent + " " + r.cells[2].textContent)`, &circuitRows),
		chromedp.Click(`#circuits-heads tr[data-layer]`, chromedp.ByQuery),
		chromedp.Text("#focus-title", &openedFromCircuits, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	var wantCircuits []string
	for l, layer := range circuits.Inspect.Circuits.Prefix {
		for h, v := range layer {
			wantCircuits = append(wantCircuits, fmt.Sprintf("%d,%d %.3f", l, h, v))
		}
	}
	if len(wantCircuits) != layers*heads || !slices.Equal(circuitRows, wantCircuits) || openedFromCircuits != "Layer 0, head 0" {
		t.Errorf("the circuits table reads %q and its first row opened %q; want %q and layer 0 head 0", circuitRows, openedFromCircuits, wantCircuits)
	}

	// The ablation table lists every head; clicking its first row (the most
	// important head) opens that head.
	var ablationRows int
	var opened string
	first := d.Inspect.Ablation.Rows[0]
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`document.querySelectorAll("#ablation tr[data-layer]").length`, &ablationRows),
		chromedp.Click(`#ablation tr[data-layer]`, chromedp.ByQuery),
		chromedp.Text("#focus-title", &opened, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if ablationRows != layers*heads {
		t.Errorf("the ablation table has %d rows, want %d", ablationRows, layers*heads)
	}
	if want := fmt.Sprintf("Layer %d, head %d", first.Layer, first.Head); opened != want {
		t.Errorf("clicking the ablation table's first row opened %q, want %q", opened, want)
	}

	// Click the last head open.
	l, h := layers-1, heads-1
	var title, selected string
	var cells, scaleStops int
	var keyAxis, queryAxis, scaleTicks []string
	if err := chromedp.Run(bctx,
		chromedp.Click(fmt.Sprintf(`.thumb[data-layer="%d"][data-head="%d"]`, l, h), chromedp.ByQuery),
		chromedp.Text("#focus-title", &title, chromedp.ByID),
		chromedp.Evaluate(`(() => { const s = document.querySelector(".thumb.selected"); return s.dataset.layer + "," + s.dataset.head; })()`, &selected),
		chromedp.Evaluate(`document.querySelectorAll("#large rect.cell").length`, &cells),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#large text[data-axis="key"]')).map((e) => e.textContent)`, &keyAxis),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('#large text[data-axis="query"]')).map((e) => e.textContent)`, &queryAxis),
		chromedp.Evaluate(`document.querySelectorAll("#scale linearGradient stop").length`, &scaleStops),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#scale text")).map((e) => e.textContent)`, &scaleTicks),
	); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Layer %d, head %d", l, h); title != want || selected != fmt.Sprintf("%d,%d", l, h) {
		t.Errorf("after clicking layer %d head %d: title %q, selected thumbnail %s", l, h, title, selected)
	}
	if cells != T*T {
		t.Errorf("the large view has %d cells, want %d", cells, T*T)
	}
	if !slices.Equal(keyAxis, d.Inspect.Labels) || !slices.Equal(queryAxis, d.Inspect.Labels) {
		t.Errorf("the large view's axes read keys %q, queries %q; want the tokens %q", keyAxis, queryAxis, d.Inspect.Labels)
	}
	if want := []string{"0", "0.25", "0.5", "0.75", "1", "masked"}; scaleStops < 2 || !slices.Equal(scaleTicks, want) {
		t.Errorf("the colour scale has %d gradient stops and labels %q, want at least 2 and %q", scaleStops, scaleTicks, want)
	}

	// Hover the cell whose weight is nearest 0.5 (the most telling to round).
	tooltip := func(ex pageExample) (string, string) {
		q, k := 0, 0
		for i, row := range ex.Attention[l][h] {
			for j, w := range row[:i+1] {
				if math.Abs(w-0.5) < math.Abs(ex.Attention[l][h][q][k]-0.5) {
					q, k = i, j
				}
			}
		}
		want := fmt.Sprintf("query %d %s → key %d %s\nweight %s", q, ex.Labels[q], k, ex.Labels[k], strconv.FormatFloat(ex.Attention[l][h][q][k], 'f', 3, 64))
		var got string
		var hidden bool
		if err := chromedp.Run(bctx,
			hover(fmt.Sprintf(`#large rect.cell[data-q="%d"][data-k="%d"]`, q, k)),
			chromedp.Evaluate(`document.getElementById("tooltip").hidden`, &hidden),
			chromedp.Text("#tooltip", &got, chromedp.ByID),
		); err != nil {
			t.Fatal(err)
		}
		if hidden {
			got = "(hidden) " + got
		}
		return got, want
	}
	if got, want := tooltip(d.Inspect); got != want {
		t.Errorf("tooltip %q, want %q", got, want)
	}

	// Hover the last query in the head view: its lines, and only those, light up.
	q := T - 1
	wantLines := 0
	for _, w := range d.Inspect.Attention[l][h][q] {
		if w >= 0.01 {
			wantLines++
		}
	}
	var lit int
	var from []string
	if err := chromedp.Run(bctx,
		hover(fmt.Sprintf(`#lines text[data-q="%d"]`, q)),
		chromedp.Evaluate(`document.querySelectorAll("#lines.active .link.hl").length`, &lit),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#lines .tok.hl")).map((e) => e.dataset.q)`, &from),
	); err != nil {
		t.Fatal(err)
	}
	if lit != wantLines || len(from) != 1 || from[0] != strconv.Itoa(q) {
		t.Errorf("hovering query %d lit %d lines and tokens %q, want %d lines from it alone", q, lit, from, wantLines)
	}

	// Switch to the third held-out example.
	fills := `Array.from(document.querySelectorAll("#large rect.cell")).map((r) => r.getAttribute("fill") || "masked")`
	var before, after []string
	var note string
	var table [][]string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(fills, &before),
		chromedp.SetValue("#example", "3", chromedp.ByID),
		chromedp.Evaluate(`document.getElementById("example").dispatchEvent(new Event("change"))`, nil),
		chromedp.Evaluate(fills, &after),
		chromedp.Text("#example-note", &note, chromedp.ByID),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#predictions tr")).map((r) => Array.from(r.querySelectorAll("td")).map((c) => c.textContent))`, &table),
	); err != nil {
		t.Fatal(err)
	}
	// Its predictions against its targets: the rows target and predicted
	// (the third and fourth) name each scored position's tokens, with a tick
	// or a cross.
	if ex := d.Examples[2]; len(table) != 5 || len(table[2]) != T || len(table[3]) != T {
		t.Errorf("the predictions table after choosing example 3 is %q", table)
	} else {
		label := map[int]string{}
		for _, e := range append([]pageExample{d.Inspect}, d.Examples...) {
			for i, id := range e.Tokens {
				label[id] = e.Labels[i]
			}
		}
		for i, target := range ex.Targets {
			wantTarget, wantPred := "", label[ex.Predictions[i]]
			if target != nil {
				wantTarget = label[*target]
				wantPred += map[bool]string{true: " ✓", false: " ✗"}[ex.Predictions[i] == *target]
			}
			if table[2][i] != wantTarget || table[3][i] != wantPred {
				t.Errorf("example 3 position %d shows target %q, predicted %q; want %q and %q", i, table[2][i], table[3][i], wantTarget, wantPred)
			}
		}
	}
	if strings.Join(before, " ") == strings.Join(after, " ") {
		t.Error("choosing example 3 left the heatmap as it was")
	}
	if !strings.Contains(note, "held-out 2") {
		t.Errorf("after choosing example 3 the note says %q, want held-out 2", note)
	}
	if got, want := tooltip(d.Examples[2]); got != want {
		t.Errorf("example 3: tooltip %q, want %q", got, want)
	}

	var shot []byte
	if err := chromedp.Run(bctx, chromedp.FullScreenshot(&shot, 90)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "inspect-html.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}

	events.check(t, path)
	t.Logf("browser test: %v (page %d bytes)", time.Since(start).Round(time.Millisecond), len(raw))
}

// pageExample is the part of an embedded example the browser test checks.
type pageExample struct {
	Ablation struct {
		Rows []struct{ Layer, Head int }
	} `json:"ablation"`
	Tokens      []int           `json:"tokens"`
	Labels      []string        `json:"labels"`
	Targets     []*int          `json:"targets"`
	Predictions []int           `json:"predictions"`
	Maps        [][]string      `json:"maps"`
	Attention   [][][][]float64 `json:"-"` // Maps decoded
	Heads       [][]headRole    `json:"heads"`
}

// decodeMaps fills Attention from Maps.
func (e *pageExample) decodeMaps(t *testing.T) {
	t.Helper()
	e.Attention = decodeMaps(t, e.Maps, len(e.Tokens))
}

// headRole is a head's role as -json gives it.
type headRole struct {
	Role    string       `json:"role"`
	Score   float64      `json:"score"`
	OffsetK int          `json:"offset_k"`
	Scores  heads.Scores `json:"scores"`
}

// caption is how the page labels a thumbnail with the head's role and score.
func (r headRole) caption() string {
	switch r.Role {
	case "offset":
		return fmt.Sprintf("offset k=%d %.2f", r.OffsetK, r.Score)
	case "diffuse":
		best, score := heads.Pattern(""), 0.0
		for _, p := range []heads.Pattern{"previous-token", "self", "first-token", "separator", "offset", "duplicate-token", "induction", "smallest-remaining", "next-larger"} {
			if r.Scores[p] > score {
				best, score = p, r.Scores[p]
			}
		}
		if best == "offset" {
			best = heads.Pattern(fmt.Sprintf("offset k=%d", r.OffsetK))
		}
		return fmt.Sprintf("diffuse (best: %s %.2f)", best, r.Score)
	}
	return fmt.Sprintf("%s %.2f", r.Role, r.Score)
}

// TestKVHeadsInBrowser: on the page of a model whose query heads share
// key-value heads (open/hf's Llama fixture: 4 query heads, 2 kv heads),
// each thumbnail names the key-value head its head reads, and so does the
// title of a head clicked open; the page logs no error.
func TestKVHeadsInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	path := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", filepath.Join("..", "..", "open", "hf", "testdata", "llama"), "-tokens", llamaTokens, "-examples", "2", "-html", path)
	bctx, events := openPage(t, chromium, path)
	var captions []string
	var title string
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid .thumb figcaption b")).map((b) => b.textContent)`, &captions),
		chromedp.Click(`.thumb[data-layer="1"][data-head="2"]`, chromedp.ByQuery),
		chromedp.Text("#focus-title", &title, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	want := []string{"L0 H0 · kv 0", "L0 H1 · kv 0", "L0 H2 · kv 1", "L0 H3 · kv 1", "L1 H0 · kv 0", "L1 H1 · kv 0", "L1 H2 · kv 1", "L1 H3 · kv 1"}
	if !slices.Equal(captions, want) || title != "Layer 1, head 2 (key-value head 1)" {
		t.Errorf("thumbnails %q, opened head %q; want %q and layer 1 head 2 reading key-value head 1", captions, title, want)
	}
	events.check(t, path)
}
