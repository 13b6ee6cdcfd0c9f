package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
)

// gemmaLike is a copy model of Gemma 2's parts at a toy size: a windowed
// (local) layer 0 and a global layer 1, head_dim apart from d_model/heads,
// sandwich norms and a final soft-cap.
func gemmaLike(t *testing.T) (string, model.Config) {
	task := data.TaskConfig{Name: "copy", Length: 4, Symbols: 5}
	cfg := model.Config{Vocab: 6, Context: 8, DModel: 8, Heads: 2, HeadDim: 6, Layers: 2, MLP: true, DFF: 16,
		Norm: model.NormRMS, NormOffset: true, NormPlacement: model.PlacementSandwich, Activation: model.ActivationGeGLU,
		Position: model.PositionRope, Window: 2, GlobalLayers: model.NewLayerList(1), FinalSoftcap: 30}
	return newCheckpoint(t, cfg, task), cfg
}

// TestLocalLayersInBrowser: on the page of a local/global model each layer's
// label and each thumbnail's title say whether it is local or global, as
// the terminal's panel titles do, and so does the title of a head opened;
// a local layer's large view masks the keys outside its window and a
// global layer's only those after the query (the page knew one window for
// every layer); the model card gives head_dim; the circuits' notes say
// what direct logit attribution and the logit lens do where the readout is
// not linear; the page logs no error.
func TestLocalLayersInBrowser(t *testing.T) {
	chromium := tooltest.Chromium(t)
	ckpt, cfg := gemmaLike(t)
	path := filepath.Join(t.TempDir(), "page.html")
	runOK(t, "-checkpoint", ckpt, "-circuits", "-examples", "1", "-html", path)
	bctx, events := openPage(t, chromium, path)
	var labels, localThumbs, card []string
	var circuits, lensNote string
	masked := map[int]int{}
	titles := map[int]string{}
	if err := chromedp.Run(bctx,
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid .layer-label")).map((l) => l.textContent + "|" + l.className)`, &labels),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#grid .thumb.local")).map((f) => f.dataset.layer + "," + f.dataset.head + " " + f.title.split(":")[0])`, &localThumbs),
		chromedp.Evaluate(`Array.from(document.querySelectorAll("#model-card dt, #model-card dd")).map((e) => e.textContent)`, &card),
		chromedp.Text("#circuits", &circuits, chromedp.ByID),
		chromedp.Text("#lens-note", &lensNote, chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	for _, l := range []int{0, 1} {
		var n int
		var title string
		if err := chromedp.Run(bctx,
			chromedp.Click(fmt.Sprintf(`.thumb[data-layer="%d"][data-head="1"]`, l), chromedp.ByQuery),
			chromedp.Text("#focus-title", &title, chromedp.ByID),
			chromedp.Evaluate(`document.querySelectorAll("#large rect.cell.masked").length`, &n),
		); err != nil {
			t.Fatal(err)
		}
		masked[l], titles[l] = n, title
	}
	if want := []string{"layer 0 · local|layer-label local", "layer 1 · global|layer-label global"}; !slices.Equal(labels, want) {
		t.Errorf("layer labels %q, want %q", labels, want)
	}
	if want := []string{"0,0 layer 0 (local), head 0", "0,1 layer 0 (local), head 1"}; !slices.Equal(localThumbs, want) {
		t.Errorf("thumbnails marked local %q, want %q", localThumbs, want)
	}
	if titles[0] != "Layer 0 (local), head 1" || titles[1] != "Layer 1 (global), head 1" {
		t.Errorf("opened heads titled %q and %q", titles[0], titles[1])
	}
	// 8 positions: 28 keys after their query; the window of 2 hides 21 more.
	if causal, window := 8*7/2, 6*7/2; masked[0] != causal+window || masked[1] != causal {
		t.Errorf("large views mask %d cells on the local layer and %d on the global one, want %d and %d", masked[0], masked[1], causal+window, causal)
	}
	if i := slices.Index(card, "d_model / d_head"); i < 0 || card[i+1] != "8 / 6" {
		t.Errorf("the model card %q, want d_model / d_head 8 / 6", card)
	}
	for _, want := range []string{"Where the readout is not linear: " + analysis.AttributionReadout(cfg) + "."} {
		if !strings.Contains(circuits, want) {
			t.Errorf("the circuits' notes %q: no %q", circuits, want)
		}
	}
	if want := "Where the readout is not linear: " + analysis.LensReadout(cfg) + "."; !strings.HasSuffix(lensNote, want) {
		t.Errorf("the lens note %q, want it to end %q", lensNote, want)
	}
	events.check(t, path)
}
