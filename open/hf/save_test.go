package hf_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// TestSaveGPT2WritesHuggingFaceLayout: a GPT-2 loaded from the fixture the
// PyTorch script wrote in Hugging Face's layout, saved again by SaveGPT2,
// holds every tensor under the fixture's name with the fixture's bytes
// (Conv1D weights transposed back), and loads back to the same logits; a
// model GPT-2 cannot hold is refused in one line.
func TestSaveGPT2WritesHuggingFaceLayout(t *testing.T) {
	fixture := filepath.Join("testdata", "prefixed")
	m := load(t, fixture, hf.Options{}).Model
	dir := filepath.Join(t.TempDir(), "saved")
	if err := hf.SaveGPT2(dir, m); err != nil {
		t.Fatal(err)
	}
	want, saved := readAll(t, filepath.Join(fixture, hf.WeightsFile)), readAll(t, filepath.Join(dir, hf.WeightsFile))
	for name, data := range saved {
		if !slices.Equal(data, want[name]) {
			t.Errorf("%s: %d values differ from the fixture's %d", name, len(data), len(want[name]))
		}
	}
	if len(saved) != len(want)-1 { // the fixture also holds the tied lm_head.weight
		t.Errorf("saved %d tensors, the fixture %d besides lm_head.weight", len(saved), len(want)-1)
	}
	ref := readReference(t, "prefixed")
	closeTo(t, "saved and loaded", logits(t, load(t, dir, hf.Options{}).Model, ref.Tokens), logits(t, m, ref.Tokens), 0)

	rope, err := model.New(model.Config{Vocab: 9, Context: 8, DModel: 8, Heads: 2, Layers: 1, MLP: true, DFF: 8,
		QKVBias: true, OutBias: true, Position: model.PositionRope}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = hf.SaveGPT2(filepath.Join(t.TempDir(), "rope"), rope)
	if err == nil || !strings.Contains(err.Error(), "not a GPT-2: model.position = rope") || strings.Contains(err.Error(), "\n") {
		t.Errorf("saving a rope model as GPT-2: %v", err)
	}
}

// readAll is every tensor of a float32 safetensors file, by name.
func readAll(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, info := range f.Tensors() {
		raw, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[info.Name] = raw
	}
	return out
}
