package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// The induction run's clean and corrupted inputs: the block's first copy
// replaced.
const (
	patchClean   = "3 7 1 9 3 7 1"
	patchCorrupt = "11 12 13 14 3 7 1"
)

// patchArgs are -patch KIND on the induction run, logit difference of 9
// over 14, then args.
func patchArgs(kind string, args ...string) []string {
	return append([]string{"-checkpoint", inductionCheckpoint, "-tokens", patchClean, "-corrupt-tokens", patchCorrupt,
		"-patch", kind, "-answer", "9", "-wrong", "14"}, args...)
}

// TestPatchJSONIsTheAPI: -patch z-by-pos -json's values are
// analysis.PatchHeads' on the same inputs, for the heads -layer and
// -head select ([layer][head][position] by the model's numbers in layers
// and heads), with its clean and corrupted figures.
func TestPatchJSONIsTheAPI(t *testing.T) {
	var doc struct {
		Patching struct {
			Clean, Corrupted float64
			Layers, Heads    []int
			Axes             []string
			Values           [][][]*float64
		}
	}
	if err := json.Unmarshal(runOK(t, patchArgs("z-by-pos", "-json", "-layer", "1", "-head", "1,3")...), &doc); err != nil {
		t.Fatal(err)
	}
	m := opentest.Induction(t).Model
	clean, err := analysis.RunTokensWithCache(m, [][]int{{3, 7, 1, 9, 3, 7, 1}}, analysis.PatchNames(m.Config, "z")...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := analysis.PatchHeads(clean, [][]int{{11, 12, 13, 14, 3, 7, 1}}, "z", true, analysis.LogitDiffMetric(7, 9, 14), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := doc.Patching
	if p.Clean != want.Clean || p.Corrupted != want.Corrupted || fmt.Sprint(p.Layers, p.Heads, p.Axes) != "[1] [1 3] [layer head pos]" {
		t.Fatalf("clean %v corrupted %v layers %v heads %v axes %v; want %v %v [1] [1 3] [layer head pos]", p.Clean, p.Corrupted, p.Layers, p.Heads, p.Axes, want.Clean, want.Corrupted)
	}
	for j, h := range p.Heads {
		for pos, v := range p.Values[0][j] {
			if w := want.Values.At((4+h)*7 + pos); v == nil || *v != w {
				t.Errorf("L1 H%d pos %d: %v, PatchHeads %v", h, pos, v, w)
			}
		}
	}
}

// TestPatchView: the text view of -patch z-by-pos on a GPT-2 of 3 layers x
// 4 heads over 30 tokens fits 80 columns (its heatmap wrapped into blocks
// of positions), lists the components that move the metric most and
// writes the PNG; the progress line counts the runs patched.
func TestPatchView(t *testing.T) {
	plainEnv(t, "80")
	dir := opentest.GPT2Dir(t, model.Config{Vocab: 64, Context: 32, DModel: 8, Heads: 4, Layers: 3, DFF: 16})
	var clean, corrupt []string
	for i := range 30 {
		clean, corrupt = append(clean, fmt.Sprint(i+1)), append(corrupt, fmt.Sprint((i*7)%64))
	}
	png := filepath.Join(t.TempDir(), "p.png")
	args := []string{"-checkpoint", dir, "-tokens", strings.Join(clean, " "), "-corrupt-tokens", strings.Join(corrupt, " "), "-patch", "z-by-pos", "-metric", "loss", "-summary"}
	with, without, shown := runProgress(t, args...)
	if !bytes.Equal(with, without) {
		t.Errorf("stdout with progress differs from stdout without")
	}
	for _, want := range []string{"patching z-by-pos [", "/360 runs"} {
		if !strings.Contains(shown, want) {
			t.Errorf("no %q in the progress: %q", want, shown)
		}
	}
	out := string(runNoted(t, args...))
	for _, want := range []string{"patching z-by-pos (blocks.N.attn.hook_z)", "metric: the clean text's next-token loss", "component", "and 350 more components", "rows = heads, columns = positions", "L2 H3"} {
		if !strings.Contains(out, want) {
			t.Errorf("the view lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > 79 {
			t.Errorf("a line of %d columns at 80: %q", n, line)
		}
	}
	runNoted(t, append(args[:len(args)-1], "-png", png)...)
	if info, err := os.Stat(png); err != nil || info.Size() == 0 {
		t.Errorf("-png: %v", err)
	}
}

// TestPatchRefusals: -patch's mistakes are refused in one line before
// anything runs.
func TestPatchRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", inductionCheckpoint, "-tokens", patchClean, "-corrupt-tokens", patchCorrupt}, "-corrupt-tokens is used only with -patch KIND"},
		{[]string{"-checkpoint", inductionCheckpoint, "-tokens", patchClean, "-corrupt-tokens", "1 2", "-patch", "z"}, "-patch: the corrupted input is 2 tokens and the clean one 7 tokens; give them the same length"},
		{patchArgs("z", "-answer", "9 9"), `-answer "9 9" is 2 tokens; logit difference compares two single tokens`},
		{patchArgs("mlp_out"), "-patch mlp_out: activation patching of mlp_out: the model has no blocks.0.hook_mlp_out"},
		{patchArgs("zz"), `-patch "zz": no such kind`},
		{[]string{"-checkpoint", inductionCheckpoint, "-corrupt-tokens", patchCorrupt, "-patch", "z"}, "-patch needs the clean input"},
		{[]string{"-checkpoint", inductionCheckpoint, "-tokens", patchClean, "-corrupt-tokens", "11 zz 1", "-patch", "z"}, `-corrupt-tokens: "zz" (token 1) is not a number or a token name`},
	} {
		var stdout, stderr bytes.Buffer
		err := run(c.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || stdout.Len() > 0 {
			t.Errorf("%q: %v, want one line with %q and no output", c.args, err, c.want)
		}
	}
}

// TestPatchInBrowser: the page of -patch resid_pre draws the patching
// table, a row a layer and a column a position, each cell the metric of
// -json to 3 decimals; that of z-by-pos a row a layer's head; neither
// logs an error.
func TestPatchInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	for _, c := range []struct {
		kind       string
		rows, cols int
	}{{"resid_pre", 2, 7}, {"z-by-pos", 8, 7}, {"attribution-z", 2, 4}} {
		path := filepath.Join(t.TempDir(), "page.html")
		runOK(t, patchArgs(c.kind, "-examples", "2", "-html", path)...)
		var doc struct {
			Patching struct{ Values json.RawMessage }
		}
		if err := json.Unmarshal(runOK(t, patchArgs(c.kind, "-examples", "2", "-json")...), &doc); err != nil {
			t.Fatal(err)
		}
		var values [][]float64
		if c.kind == "z-by-pos" {
			var byHead [][][]float64
			if err := json.Unmarshal(doc.Patching.Values, &byHead); err != nil {
				t.Fatal(err)
			}
			for _, layer := range byHead {
				values = append(values, layer...)
			}
		} else if err := json.Unmarshal(doc.Patching.Values, &values); err != nil {
			t.Fatal(err)
		}
		bctx, events := openPage(t, chromium, path)
		var cells [][]string
		if err := chromedp.Run(bctx, chromedp.Evaluate(`Array.from(document.querySelectorAll("#patching-table tr")).slice(1).map((tr) => Array.from(tr.cells).slice(1).map((c) => c.textContent))`, &cells)); err != nil {
			t.Fatal(err)
		}
		if len(cells) != c.rows || len(cells[0]) != c.cols {
			t.Fatalf("%s: the patching table is %d rows of %v, want %d rows of %d", c.kind, len(cells), cells, c.rows, c.cols)
		}
		for r, row := range cells {
			for p, text := range row {
				if want := values[r][p]; text != fmt.Sprintf("%.3f", want) && !(math.Abs(want) < 5e-4 && text == "0.000") {
					t.Errorf("%s: row %d position %d: %q, -json %v", c.kind, r, p, text, want)
				}
			}
		}
		events.check(t, path)
	}
}
