package report

import (
	"path/filepath"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// TestTextRefusedBeforeWeights: -text on a toy task's checkpoint, which has
// no tokenizer, is refused before its 25 MB of weights are read (Build
// allocates far less), in the one line that names the flag, the
// checkpoint and its task.
func TestTextRefusedBeforeWeights(t *testing.T) {
	run := rundir.DefaultConfig()
	run.Task = data.TaskConfig{Name: "copy", Length: 4, Symbols: 8}
	run.Model = model.Config{Vocab: 9, Context: 8, DModel: 512, Heads: 2, Layers: 4, MLP: true, DFF: 512}
	m, err := model.New(run.Model, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "copy.safetensors")
	if err := checkpoint.Save(ckpt, m, run, 1); err != nil {
		t.Fatal(err)
	}
	m = nil
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = build(Options{Checkpoint: ckpt, Text: "abc", Samples: 1, Seed: 1})
	runtime.ReadMemStats(&after)
	want := "-text: " + ckpt + "'s task (copy) has no tokenizer; give its tokens with -tokens"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("refusing -text allocated %d bytes; the weights are %.0f", alloc, 4*run.Model.ParamCount())
	}
}
