package main

import (
	"flag"
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
)

var regen = flag.Bool("regen", false, "retrain the test checkpoint "+testCheckpoint)

// testCheckpoint is a tiny model trained on copy (4 symbols of 8, so T = 8,
// vocabulary 9): 2 attention-only layers of 2 heads, width 16, float32.
const testCheckpoint = "testdata/copy.safetensors"

// regenSteps and regenLR train it far enough that its heads have roles.
const (
	regenSteps = 400
	regenLR    = 1e-2
	regenBatch = 32
)

// TestRegenerateCheckpoint rebuilds testdata/copy.safetensors under -regen:
// Adam (package train) on model.Build's training graph, batches from the
// per-step streams of the run seed. It is deterministic, so the file only
// changes when the model, layers or optimizer code changes.
func TestRegenerateCheckpoint(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to retrain " + testCheckpoint)
	}
	cfg := rundir.DefaultConfig()
	cfg.Seed = 7
	cfg.Task = data.TaskConfig{Name: "copy", Length: 4, Symbols: 8}
	cfg.Model = model.Config{DModel: 16, Heads: 2, Layers: 2, OutBias: true}
	cfg.Train.BatchSize, cfg.Train.Steps, cfg.Train.LR = regenBatch, regenSteps, regenLR
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	task, err := data.New(cfg.Task)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg.Model, tensor.Float32, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.Build(m, model.BuildOptions{Batch: regenBatch, SeqLen: task.SeqLen(), Train: true})
	if err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	adam := train.NewAdam(m.Params, tensor.Float64, cfg.Train.Beta1, cfg.Train.Beta2, cfg.Train.Eps, 0)
	b := data.NewBatch(regenBatch, task.SeqLen())
	for step := range regenSteps {
		if err := data.Fill(task, b, data.StepRNG(cfg.Seed, step)); err != nil {
			t.Fatal(err)
		}
		if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
			t.Fatal(err)
		}
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		grads, err := g.Gradients()
		if err != nil {
			t.Fatal(err)
		}
		if err := adam.Update(m.Params, grads, regenLR); err != nil {
			t.Fatal(err)
		}
		if step%50 == 0 || step == regenSteps-1 {
			t.Logf("step %d loss %v", step, g.Loss.Value())
		}
		vm.Reset()
	}
	if err := checkpoint.Save(testCheckpoint, m, cfg, regenSteps); err != nil {
		t.Fatal(err)
	}
}

// newCheckpoint saves an untrained float32 model of cfg (seed 1), its run's
// task task, as a checkpoint in a new temporary directory and returns its
// path.
func newCheckpoint(t *testing.T, cfg model.Config, task data.TaskConfig) string {
	t.Helper()
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	return saveCheckpoint(t, filepath.Join(t.TempDir(), "checkpoint.safetensors"), m, task)
}

// saveCheckpoint saves m as a checkpoint at path, its run config the
// defaults with task and m's config, and returns path.
func saveCheckpoint(t *testing.T, path string, m *model.Model, task data.TaskConfig) string {
	t.Helper()
	run := rundir.DefaultConfig()
	run.Task, run.Model = task, m.Config
	if err := checkpoint.Save(path, m, run, 0); err != nil {
		t.Fatal(err)
	}
	return path
}
