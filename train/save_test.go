package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/rundir"
)

// TestBestIsTheCheckpointsBytes: a step that evaluates best and saves a
// checkpoint writes the weights once, under both names (one inode); a later
// checkpoint replaces checkpoint.safetensors and leaves best.safetensors
// holding the step it was best at.
func TestBestIsTheCheckpointsBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg := parse(t, smallYAML, "train.steps=8", "train.eval_every=8", "train.checkpoint_every=8")
	runOK(t, cfg, Options{Dir: dir})
	ckpt, best := stat(t, filepath.Join(dir, rundir.CheckpointFile)), stat(t, filepath.Join(dir, rundir.BestFile))
	if !os.SameFile(ckpt, best) {
		t.Fatalf("best.safetensors of step 8 is a second file, not a name of checkpoint.safetensors")
	}

	cfg = parse(t, smallYAML, "train.steps=16", "train.eval_every=8", "train.checkpoint_every=8")
	res := runOK(t, cfg, Options{Dir: dir, Resume: true})
	got, err := checkpoint.Load(filepath.Join(dir, rundir.BestFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.Step != res.BestStep || !got.Sealed {
		t.Errorf("best.safetensors holds step %d (sealed %v), the run's best is step %d", got.Step, got.Sealed, res.BestStep)
	}
	ckpt, best = stat(t, filepath.Join(dir, rundir.CheckpointFile)), stat(t, filepath.Join(dir, rundir.BestFile))
	if same := os.SameFile(ckpt, best); same != (res.BestStep == 16) {
		t.Errorf("best of step %d shares the checkpoint of step 16: %v", res.BestStep, same)
	}
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}
