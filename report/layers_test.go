package report

import (
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TestManyHeadsShowOneLayer: with Layers left to the default, a model of
// more than MaxHeadsShown heads (3 layers x 12) shows the heatmaps of the
// strongest heads alone, says so, and still lists every head; a model of
// fewer shows every layer; Layers Every shows every layer of either.
func TestManyHeadsShowOneLayer(t *testing.T) {
	for _, c := range []struct {
		heads  int
		layers Pick
		panels int
		note   bool
	}{
		{12, Pick{}, 1, true},
		{12, Every, 3, false},
		{2, Pick{}, 3, false},
	} {
		task := data.TaskConfig{Name: "copy", Length: 4, Symbols: 5}
		cfg := model.Config{Vocab: 6, Context: 8, DModel: 24, Heads: c.heads, Layers: 3}
		m, err := model.New(cfg, tensor.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		run := rundir.DefaultConfig()
		run.Task, run.Model = task, cfg
		path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
		if err := checkpoint.Save(path, m, run, 1); err != nil {
			t.Fatal(err)
		}
		r, err := build(Options{Checkpoint: path, Layers: c.layers, Samples: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		v := r.Text(false)
		if len(v.Layers) != c.panels || len(v.Heads) != 3*c.heads || (v.LayerNote != "") != c.note {
			t.Errorf("%d heads, -layer %q: %d layers of heatmaps, %d heads listed, note %q; want %d, %d, note %t",
				c.heads, c.layers, len(v.Layers), len(v.Heads), v.LayerNote, c.panels, 3*c.heads, c.note)
		}
	}
}
