package report

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// TestPanelMarksLocalLayers: in a local/global model (global_layers) each
// panel's title says which kind its layer is, and only a local layer's
// panel draws the window's band.
func TestPanelMarksLocalLayers(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{Vocab: task.Vocab(), Context: task.SeqLen(), DModel: 8, Heads: 2, Layers: 2, Window: 2,
		GlobalLayers: model.NewLayerList(1), Position: model.PositionRope}
	m, err := model.New(cfg, tensor.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int, task.SeqLen())
	pass, err := analysis.ForwardTokens(m, tokens)
	if err != nil {
		t.Fatal(err)
	}
	r := &Report{Task: task, Config: cfg, Sequence: Sequence{Tokens: tokens}, Forward: pass}
	want := []struct {
		title  string
		window int
	}{{"layer 0 head 1 (local)", 2}, {"layer 1 head 1 (global)", 0}}
	for l, w := range want {
		if p := r.Panel(l, 1, nil); p.Title != w.title || p.Window != w.window {
			t.Errorf("layer %d: panel %q, window %d; want %q, %d", l, p.Title, p.Window, w.title, w.window)
		}
	}
}
