package rundir

import (
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestGlobalLayersYAML: global_layers is a YAML list of ints, from a file
// or -set; anything else is refused in one line naming the key.
func TestGlobalLayersYAML(t *testing.T) {
	const base = "task: {name: copy, length: 8, symbols: 16}\nmodel: {d_model: 8, heads: 2, layers: 4, window: 2, global_layers: [3, 1]}\n"
	cfg, err := ParseConfig("x.yaml", []byte(base), []string{"model.global_layers=[0, 2]"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Model.GlobalLayers.Indexes(); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("global_layers %v, want [0 2] (the -set over the file)", got)
	}
	roundTrip(t, "global_layers", cfg)
	_, err = ParseConfig("x.yaml", []byte("model: {window: 2, global_layers: 1}\n"), nil)
	msgtest.Refusal(t, "a number for a list", err, "x.yaml:1:35: model.global_layers: want a list of layer indexes such as [1, 3], got a value")
	_, err = ParseConfig("x.yaml", []byte("model: {window: 2, global_layers: [a]}\n"), nil)
	msgtest.Refusal(t, "a word in the list", err, "model.global_layers: want a list of layer indexes such as [1, 3]")
}
