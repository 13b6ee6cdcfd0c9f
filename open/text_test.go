package open

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

// TestTextRefusedFromHeader: text for a toy task's checkpoint (TextFlag)
// is refused in one line naming the flag, the checkpoint and its task,
// from the header alone: opening allocates far less than the checkpoint's
// 25 MB of weights. A text model's checkpoint still opens with it.
func TestTextRefusedFromHeader(t *testing.T) {
	cfg := rundir.DefaultConfig()
	cfg.Task = data.TaskConfig{Name: "copy", Length: 4, Symbols: 8}
	cfg.Model = model.Config{Vocab: 9, Context: 8, DModel: 512, Heads: 2, Layers: 4, MLP: true, DFF: 512}
	m, err := model.New(cfg.Model, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(t.TempDir(), "copy.safetensors")
	if err := checkpoint.Save(ckpt, m, cfg, 1); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Open(ckpt, Options{TextFlag: "-text"})
	runtime.ReadMemStats(&after)
	want := "-text: " + ckpt + "'s task (copy) has no tokenizer; give its tokens with -tokens"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("refusing -text allocated %d bytes; the weights are %.0f", alloc, 4*cfg.Model.ParamCount())
	}

	dir := t.TempDir()
	textRun(t, dir, write(t, filepath.Join(dir, "corpus.txt"), corpus))
	if _, err := Open(dir, Options{TextFlag: "-text"}); err != nil {
		t.Errorf("a text model with -text: %v", err)
	}
}
