package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
)

// archTokens is the sequence the views show on each architecture: three
// tokens twice, none a fixture's beginning- or end-of-text id.
const archTokens = "10 11 12 10 11 12"

// TestEveryViewOnEachArchitecture runs every view on each new
// architecture's fixture (modernFixtures), as a user meets them at 80
// columns: the text
// view's card names the class and says the config's blocks and attention
// in Config.Blocks' and Family's words with no line past 80 columns;
// -circuits and -ablate print every section, and say what direct logit
// attribution and the logit lens do where the readout is not linear
// exactly where the config's readout is not; a local/global model's
// panels say (local) and (global) and its heads' table has a kind column; -json, -png and -html write the same
// card and the layers' kinds; -graph on both paths counts the model's
// parameters.
func TestEveryViewOnEachArchitecture(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	for _, c := range modernFixtures {
		t.Run(c.variant, func(t *testing.T) {
			dir := filepath.Join("..", "..", "open", "hf", "testdata", c.variant)
			op, err := open.Open(dir, open.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := op.Model.Config
			out := string(runNoted(t, "-checkpoint", dir, "-tokens", archTokens, "-layer", "-1", "-circuits", "-ablate", "-examples", "2", "-color", "never"))
			for _, line := range strings.Split(out, "\n") {
				if n := len([]rune(line)); n > 80 {
					t.Errorf("a line of %d columns: %q", n, line)
				}
			}
			text := prose(out)
			card := fmt.Sprintf("%s, %s", cfg.Blocks(), cfg.Family())
			for _, want := range []string{op.Origin, card, "direct logit attribution", "logit lens", "composition", "Δloss"} {
				if !strings.Contains(text, want) {
					t.Errorf("the text view lacks %q:\n%s", want, out)
				}
			}
			if said, want := strings.Count(text, "where the readout is not linear:"), notLinear(cfg); said != want {
				t.Errorf("the text view says where the readout is not linear %d times, want %d:\n%s", said, want, out)
			}
			kinds := layerKindsOf(cfg)
			if local := strings.Contains(out, "(local)") && strings.Contains(out, "(global)"); local != (kinds != nil) {
				t.Errorf("panels marked local and global: %t, want %t", local, kinds != nil)
			}
			if column := strings.Contains(out, "  kind  "); column != (kinds != nil) {
				t.Errorf("the heads' table has a kind column: %t, want %t", column, kinds != nil)
			}
			png, page := filepath.Join(t.TempDir(), "heads.png"), filepath.Join(t.TempDir(), "page.html")
			var doc struct {
				Blocks     string   `json:"blocks"`
				Family     string   `json:"family"`
				LayerKinds []string `json:"layer_kinds"`
			}
			if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-tokens", archTokens, "-json", "-png", png, "-html", page), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Blocks != cfg.Blocks() || doc.Family != cfg.Family() || !slices.Equal(doc.LayerKinds, kinds) {
				t.Errorf("-json: blocks %q, family %q, layer_kinds %q; want %q, %q, %q", doc.Blocks, doc.Family, doc.LayerKinds, cfg.Blocks(), cfg.Family(), kinds)
			}
			if img := readPNG(t, png); img.Bounds().Dx() == 0 {
				t.Error("-png wrote an empty image")
			}
			var data struct {
				Inspect struct {
					LayerKinds []string `json:"layer_kinds"`
					Blocks     string   `json:"blocks"`
				} `json:"inspect"`
			}
			if raw, err := os.ReadFile(page); err != nil || json.Unmarshal(blob(t, raw), &data) != nil || !slices.Equal(data.Inspect.LayerKinds, kinds) || data.Inspect.Blocks != cfg.Blocks() {
				t.Errorf("-html: the page's layer_kinds %q and blocks %q (%v)", data.Inspect.LayerKinds, data.Inspect.Blocks, err)
			}
			for _, path := range []string{"fused", "gorgonia"} {
				graph := string(runOK(t, "-checkpoint", dir, "-graph", "-path", path))
				if want := fmt.Sprintf("parameters: %s\n", thousands(parameters(cfg))); !strings.HasSuffix(graph, want) {
					t.Errorf("-graph -path %s ends %q, want %q", path, graph[max(0, len(graph)-80):], want)
				}
			}
		})
	}
}

// notLinear is how many of direct logit attribution and the logit lens
// read cfg's model through something not linear.
func notLinear(cfg model.Config) int {
	n := 0
	for _, says := range []string{analysis.AttributionReadout(cfg), analysis.LensReadout(cfg)} {
		if says != "" {
			n++
		}
	}
	return n
}

// layerKindsOf is "local" or "global" for each layer of a local/global
// model, nil for one whose layers are alike.
func layerKindsOf(cfg model.Config) []string {
	if cfg.GlobalLayers == "" || cfg.Window == 0 {
		return nil
	}
	kinds := make([]string, cfg.Layers)
	for l := range kinds {
		kinds[l] = "local"
		if cfg.GlobalLayers.Contains(l) {
			kinds[l] = "global"
		}
	}
	return kinds
}

// parameters counts the weights of cfg's tensors.
func parameters(cfg model.Config) int {
	n := 0
	for _, s := range cfg.ParamSpecs() {
		size := 1
		for _, d := range s.Shape {
			size *= d
		}
		n += size
	}
	return n
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
