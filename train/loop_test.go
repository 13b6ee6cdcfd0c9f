package train

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// smallYAML is a run that exercises every piece of state a resume must
// restore: two full blocks, attention dropout (per-step masks), decoupled
// weight decay, warmup + cosine, clipping, an evaluation set of 300 rows (two
// chunks of 150: EvalBatch), and best.safetensors.
const smallYAML = `
seed: 5
task: {name: reverse, length: 3, symbols: 5}
model: {d_model: 16, heads: 2, layers: 2, mlp: true, d_ff: 32, qkv_bias: true, dropout: 0.1}
train:
  batch_size: 8
  steps: 24
  lr: 1.0e-2
  schedule: cosine
  warmup_steps: 4
  min_lr: 1.0e-3
  grad_clip: 0.5
  weight_decay: 0.1
  log_every: 1
  eval_every: 6
  eval_size: 300
  checkpoint_every: 8
`

func parse(t *testing.T, yml string, sets ...string) rundir.Config {
	t.Helper()
	cfg, err := rundir.ParseConfig("test.yaml", []byte(yml), sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// runOK runs cfg with opts, recording what cmd/train's runs record unless
// opts says otherwise.
func runOK(t *testing.T, cfg rundir.Config, opts Options) *Result {
	t.Helper()
	if opts.Probes == nil {
		opts.Probes = analysisProbes
	}
	res, err := Run(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// lastCheckpoint is the checkpoint the run in dir kept.
func lastCheckpoint(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	return ck
}

// finalModel is the model of the checkpoint the run in dir kept, and the
// task of its config cfg.
func finalModel(t *testing.T, dir string, cfg rundir.Config) (*model.Model, data.Task) {
	t.Helper()
	task, err := data.New(cfg.Task)
	if err != nil {
		t.Fatal(err)
	}
	return lastCheckpoint(t, dir).Model, task
}

// withoutTiming reads a metrics log and drops the clock-dependent field.
func withoutTiming(t *testing.T, dir string) []map[string]any {
	t.Helper()
	lines := readJSONL[map[string]any](t, filepath.Join(dir, runlog.MetricsFile))
	for _, l := range lines {
		delete(l, "tokens_per_s")
	}
	return lines
}

// sameRun requires two run directories to hold the same metrics (minus
// timing) and byte-identical head roles, checkpoint, best and config files.
func sameRun(t *testing.T, want, got string) {
	t.Helper()
	a, b := withoutTiming(t, want), withoutTiming(t, got)
	if len(a) != len(b) {
		t.Fatalf("metrics: %d lines vs %d", len(a), len(b))
	}
	for i := range a {
		for k, v := range a[i] {
			if b[i][k] != v {
				t.Fatalf("metrics line %d: %s = %v vs %v", i+1, k, v, b[i][k])
			}
		}
		if len(a[i]) != len(b[i]) {
			t.Fatalf("metrics line %d: %v vs %v", i+1, a[i], b[i])
		}
	}
	for _, name := range []string{runlog.RolesFile, runlog.CircuitsFile, rundir.CheckpointFile, rundir.BestFile, rundir.ConfigFile} {
		x, err := os.ReadFile(filepath.Join(want, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(got, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Fatalf("%s differs between %s and %s", name, want, got)
		}
	}
	ck := lastCheckpoint(t, got)
	if ck.Step != 24 || len(ck.Model.Params) == 0 {
		t.Fatalf("final checkpoint at step %d", ck.Step)
	}
}

// TestDeterministic: the same config twice gives identical metrics apart
// from tokens_per_s, and byte-identical checkpoints (weights and metadata),
// on each attention path.
func TestDeterministic(t *testing.T) { eachPath(t, testDeterministic) }

// eachPath runs f once per attention path, as a subtest named after it,
// with the -set that selects the path.
func eachPath(t *testing.T, f func(t *testing.T, set string)) {
	for _, path := range layers.Paths {
		t.Run(string(path), func(t *testing.T) { f(t, "model.attention="+string(path)) })
	}
}

func testDeterministic(t *testing.T, path string) {
	cfg := parse(t, smallYAML, path)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	runOK(t, cfg, Options{Dir: a})
	res := runOK(t, cfg, Options{Dir: b})
	sameRun(t, a, b)
	if res.Step != 24 || res.FirstStep != 1 || res.Interrupted || res.LastEval == nil || res.LastEval.Step != 24 {
		t.Errorf("result %+v", res)
	}
	// Four evaluations and four saves (checkpoints at 8, 16, 24, plus best
	// files) took time, within the run's.
	if res.EvalTime <= 0 || res.SaveTime <= 0 || res.EvalTime+res.SaveTime > res.Elapsed {
		t.Errorf("evaluation %v and saving %v of %v", res.EvalTime, res.SaveTime, res.Elapsed)
	}
	lines := withoutTiming(t, a)
	evals := 0
	for _, l := range lines {
		if _, ok := l["eval_loss"]; ok {
			evals++
		}
	}
	if len(lines) != 24+4 || evals != 4 {
		t.Errorf("%d lines with %d evaluations, want 24 training lines and evaluations at 6, 12, 18, 24", len(lines), evals)
	}
	// Dropout really is on: a run without it learns something else.
	c := filepath.Join(t.TempDir(), "c")
	runOK(t, parse(t, smallYAML, path, "model.dropout=0"), Options{Dir: c})
	if withoutTiming(t, c)[1]["loss"] == lines[1]["loss"] {
		t.Error("dropout 0 and 0.1 gave the same second-step loss")
	}
}

// TestResumeAfterCrash: a run that dies at step 19 (after checkpoints at 8
// and 16, with metrics logged past them) and is resumed ends bit-identical to
// an uninterrupted run, on each attention path. A stray state file of a
// later step, as left by a kill between writing a state and its checkpoint,
// must not be picked up.
func TestResumeAfterCrash(t *testing.T) { eachPath(t, testResumeAfterCrash) }

func testResumeAfterCrash(t *testing.T, path string) {
	cfg := parse(t, smallYAML, path)
	want := filepath.Join(t.TempDir(), "want")
	runOK(t, cfg, Options{Dir: want})

	dir := filepath.Join(t.TempDir(), "crashed")
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the simulated crash did not happen")
			}
		}()
		_, _ = Run(context.Background(), cfg, Options{Dir: dir, Probes: analysisProbes, Observer: func(e Event) {
			if e.Step == 19 {
				panic("crash")
			}
		}})
	}()
	if ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile)); err != nil || ck.Step != 16 {
		t.Fatalf("after the crash: %v, step %v", err, ck)
	}
	stray, err := os.ReadFile(filepath.Join(want, rundir.StateFile(24)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.StateFile(24)), stray, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), cfg, Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Fatalf("a fresh run over the crashed one: %v", err)
	}
	res := runOK(t, cfg, Options{Dir: dir, Resume: true})
	if res.FirstStep != 17 || res.Step != 24 {
		t.Errorf("resumed steps %d..%d, want 17..24", res.FirstStep, res.Step)
	}
	sameRun(t, want, dir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "state-") && e.Name() != rundir.StateFile(24) {
			t.Errorf("left over: %s", e.Name())
		}
	}
}

// TestInterruptAndResume: cancelling the context (Ctrl-C) saves a checkpoint
// of the last completed step, between periodic checkpoints; resuming from it
// ends bit-identical. A run stopped before its first checkpoint resumes from
// the start.
func TestInterruptAndResume(t *testing.T) {
	cfg := parse(t, smallYAML)
	want := filepath.Join(t.TempDir(), "want")
	runOK(t, cfg, Options{Dir: want})

	for _, stopAt := range []int{13, 3} {
		dir := filepath.Join(t.TempDir(), "stopped")
		ctx, cancel := context.WithCancel(context.Background())
		res, err := Run(ctx, cfg, Options{Dir: dir, Probes: analysisProbes, Observer: func(e Event) {
			if e.Step == stopAt {
				cancel()
			}
		}})
		cancel()
		if err != nil || !res.Interrupted || res.Step != stopAt {
			t.Fatalf("interrupted run: %v %+v", err, res)
		}
		if ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile)); err != nil || ck.Step != stopAt {
			t.Fatalf("checkpoint on interrupt: %v %+v", err, ck)
		}
		if stopAt == 3 {
			// As if killed before the checkpoint: only config.yaml and metrics remain.
			for _, f := range []string{rundir.CheckpointFile, rundir.StateFile(3)} {
				if err := os.Remove(filepath.Join(dir, f)); err != nil {
					t.Fatal(err)
				}
			}
		}
		res = runOK(t, cfg, Options{Dir: dir, Resume: true})
		if first := map[int]int{13: 14, 3: 1}[stopAt]; res.FirstStep != first {
			t.Errorf("stopped at %d: resumed from step %d, want %d", stopAt, res.FirstStep, first)
		}
		sameRun(t, want, dir)
	}
}

// TestResumeRefusesOtherConfig: resuming with a config that differs from
// the saved one names the key, and so does resuming a directory whose
// checkpoint was copied in from another run.
func TestResumeRefusesOtherConfig(t *testing.T) {
	cfg := parse(t, smallYAML, "train.steps=4", "train.eval_every=0")
	dir := t.TempDir()
	runOK(t, cfg, Options{Dir: dir})
	other := parse(t, smallYAML, "train.steps=4", "train.eval_every=0", "task.name=copy")
	_, err := Run(context.Background(), other, Options{Dir: dir, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "task.name: saved reverse, given copy") {
		t.Fatalf("resume with another task: %v", err)
	}
	saved, err := checkpoint.SavedConfig(dir)
	if err != nil || !reflect.DeepEqual(saved, cfg) {
		t.Fatalf("SavedConfig: %v, %+v; want %+v", err, saved, cfg)
	}
	foreign := t.TempDir()
	runOK(t, parse(t, smallYAML, "train.steps=4", "train.eval_every=0", "seed=6"), Options{Dir: foreign})
	ckpt, err := os.ReadFile(filepath.Join(foreign, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.CheckpointFile), ckpt, 0o644); err != nil {
		t.Fatal(err)
	}
	// As with -resume and no -config: the config comes from the checkpoint,
	// and SavedConfig finds it at odds with config.yaml. Resuming with the
	// run's own config meets the same refusal.
	if _, err := checkpoint.SavedConfig(dir); err == nil || !strings.Contains(err.Error(), "seed: config.yaml 5, checkpoint 6") {
		t.Errorf("SavedConfig with a foreign checkpoint: %v", err)
	}
	_, err = Run(context.Background(), cfg, Options{Dir: dir, Resume: true})
	if err == nil || !strings.Contains(err.Error(), "does not belong to the run") || !strings.Contains(err.Error(), "seed: config.yaml 5, checkpoint 6") {
		t.Errorf("resume onto a foreign checkpoint: %v", err)
	}
	if _, err := checkpoint.SavedConfig(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no run") {
		t.Errorf("SavedConfig of an empty directory: %v", err)
	}
}

// TestNonFiniteStops: with lr 1e30 the first update leaves float32 weights
// near 1e30 and the second forward pass overflows. The run stops with an
// error naming step 2, and the checkpoint of step 1 stays loadable.
func TestNonFiniteStops(t *testing.T) {
	cfg := parse(t, smallYAML, "train.lr=1e30", "train.min_lr=0", "train.warmup_steps=0", "train.checkpoint_every=1", "train.eval_every=0")
	dir := t.TempDir()
	_, err := Run(context.Background(), cfg, Options{Dir: dir})
	want := "step 2: the training loss is NaN; stopping (the checkpoint of step 1 is untouched)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile))
	if err != nil || ck.Step != 1 {
		t.Fatalf("checkpoint after the failure: %v, %+v", err, ck)
	}
	if _, err := ck.Model.Tensors(); err != nil { // refuses a NaN or Inf weight, naming it
		t.Fatalf("checkpoint of step 1: %v", err)
	}
}

// TestStoppedClockDoesNotStop: tokens_per_s is a diagnostic, and a
// diagnostic cannot stop a run (only the loss, the gradients, the weight
// updates and the evaluations can). A clock that does not advance between
// training lines, as a coarse one does over fast steps, once stopped a
// healthy run with "step 1: tokens_per_s is +Inf; stopping". On the stopped
// clock the run trains to the end, writes the files a run on the wall clock
// writes, and the rate it could not measure as 0.
func TestStoppedClockDoesNotStop(t *testing.T) {
	cfg := parse(t, smallYAML) // a training line every step
	want := t.TempDir()
	runOK(t, cfg, Options{Dir: want})
	got := t.TempDir()
	r, err := prepare(context.Background(), cfg, Options{Dir: got, Probes: analysisProbes})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	stopped := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	r.clock = func() time.Time { return stopped }
	res, err := r.loop(context.Background())
	if err != nil {
		t.Fatalf("a run on a stopped clock: %v", err)
	}
	if res.Step != cfg.Train.Steps || res.Elapsed != 0 {
		t.Errorf("a run on a stopped clock ended at step %d after %v", res.Step, res.Elapsed)
	}
	sameRun(t, want, got)
	lines := readJSONL[map[string]any](t, filepath.Join(got, runlog.MetricsFile))
	trainLines := 0
	for _, l := range lines {
		if rate, ok := l["tokens_per_s"]; ok {
			trainLines++
			if rate != 0.0 {
				t.Errorf("step %v: tokens_per_s %v over no measured time, want 0", l["step"], rate)
			}
		}
	}
	if trainLines != cfg.Train.Steps {
		t.Errorf("%d training lines, want %d", trainLines, cfg.Train.Steps)
	}
}

// TestResumeExtendsSteps: a finished constant-schedule run of 12 steps,
// resumed with train.steps raised to 24, ends bit-identical (weights, best,
// config.yaml, metrics) to a run configured with 24 steps from the start.
// So does one killed after the extension rewrote config.yaml, resumed
// without naming the new length (SavedConfig takes it from config.yaml).
func TestResumeExtendsSteps(t *testing.T) {
	constant := []string{"train.schedule=constant", "train.min_lr=0"}
	long := parse(t, smallYAML, append(constant, "train.steps=24")...)
	short := parse(t, smallYAML, append(constant, "train.steps=12")...)
	want := filepath.Join(t.TempDir(), "want")
	runOK(t, long, Options{Dir: want})

	dir := filepath.Join(t.TempDir(), "extended")
	runOK(t, short, Options{Dir: dir})
	res := runOK(t, long, Options{Dir: dir, Resume: true})
	if res.FirstStep != 13 || res.Step != 24 || res.Steps != 24 {
		t.Errorf("extended run: steps %d..%d of %d, want 13..24 of 24", res.FirstStep, res.Step, res.Steps)
	}
	sameRun(t, want, dir)

	killed := filepath.Join(t.TempDir(), "killed")
	runOK(t, short, Options{Dir: killed})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the simulated crash did not happen")
			}
		}()
		_, _ = Run(context.Background(), long, Options{Dir: killed, Resume: true, Probes: analysisProbes, Observer: func(e Event) {
			if e.Step == 14 {
				panic("crash")
			}
		}})
	}()
	saved, err := checkpoint.SavedConfig(killed)
	if err != nil || saved.Train.Steps != 24 {
		t.Fatalf("SavedConfig after a kill mid-extension: steps %d, %v", saved.Train.Steps, err)
	}
	runOK(t, saved, Options{Dir: killed, Resume: true})
	sameRun(t, want, killed)
}

// TestResumeExtendsCosine: raising train.steps of a cosine run stretches
// the rest of the decay to the new last step: the learning rate logged at
// each new step is the schedule's with the new train.steps.
func TestResumeExtendsCosine(t *testing.T) {
	dir := t.TempDir()
	runOK(t, parse(t, smallYAML, "train.steps=12", "train.eval_every=0"), Options{Dir: dir})
	long := parse(t, smallYAML, "train.steps=24", "train.eval_every=0")
	runOK(t, long, Options{Dir: dir, Resume: true})
	sched := LRSchedule{Peak: 1e-2, Min: 1e-3, Warmup: 4, Steps: 24, Cosine: true}
	shortSched := sched
	shortSched.Steps = 12
	lines := withoutTiming(t, dir)
	if len(lines) != 24 {
		t.Fatalf("%d metrics lines, want 24", len(lines))
	}
	for _, l := range lines {
		step := int(l["step"].(float64))
		want := sched.At(step)
		if step <= 12 {
			want = shortSched.At(step)
		}
		if got := l["lr"].(float64); math.Abs(got-want) > 1e-15 {
			t.Errorf("step %d: lr %v, want %v", step, got, want)
		}
	}
}

// TestResumeRefusesOtherChanges: lowering train.steps, or changing any other
// key (a schedule key included), is refused with the rule in the message,
// and leaves the run as it was.
func TestResumeRefusesOtherChanges(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train.steps=6", "train.eval_every=0"}
	runOK(t, parse(t, smallYAML, base...), Options{Dir: dir})
	before, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sets []string
		want string
	}{
		{[]string{"train.steps=5"}, "train.steps = 5 is below the saved 6: on resume train.steps may only be raised"},
		{[]string{"train.steps=12", "train.schedule=constant"}, "train.schedule: saved cosine, given constant); on resume only train.steps may change, and only upward"},
		{[]string{"train.steps=12", "train.warmup_steps=2"}, "train.warmup_steps: saved 4, given 2)"},
		{[]string{"train.lr=0.5"}, "train.lr: saved 0.01, given 0.5)"},
	}
	for _, c := range cases {
		_, err := Run(context.Background(), parse(t, smallYAML, append(base, c.sets...)...), Options{Dir: dir, Resume: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.sets, err, c.want)
		}
	}
	after, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("config.yaml changed by refused resumes (%v)", err)
	}
}

// countdownCtx is a context whose Err is nil for its first left calls and
// context.Canceled after: a signal arriving at a known moment.
type countdownCtx struct {
	context.Context
	left int
}

func (c *countdownCtx) Err() error {
	if c.left == 0 {
		return context.Canceled
	}
	c.left--
	return nil
}

// TestSignalBeforeFirstStep: a signal while the run is being prepared ends
// it there (issue 11: drawing a huge held-out set ignored SIGTERM for about
// 100 s). The held-out set drawn in chunks is data.EvalSet bit for bit; a
// context cancelled after two chunks stops the drawing there; and a Run whose
// context is cancelled before its first step returns ErrInterruptedEarly
// without creating its directory.
func TestSignalBeforeFirstStep(t *testing.T) {
	cfg := parse(t, smallYAML)
	task, err := data.New(cfg.Task)
	if err != nil {
		t.Fatal(err)
	}
	size := 2*evalSetChunk + 100
	got, err := evalSet(context.Background(), task, size, 9)
	if err != nil {
		t.Fatal(err)
	}
	want := data.EvalSet(task, size, 9)
	if !slices.Equal(got.Tokens, want.Tokens) || !slices.Equal(got.Targets, want.Targets) || !slices.Equal(got.Mask, want.Mask) {
		t.Error("the held-out set drawn in chunks differs from data.EvalSet")
	}
	ctx := &countdownCtx{Context: context.Background(), left: 2}
	if _, err := evalSet(ctx, task, 100*evalSetChunk, 9); !errors.Is(err, context.Canceled) || ctx.left != 0 {
		t.Errorf("cancelled after two chunks: %v, %d looks left", err, ctx.left)
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Run(cancelled, cfg, Options{Dir: dir}); !errors.Is(err, ErrInterruptedEarly) {
		t.Errorf("Run with a cancelled context: %v, want %v", err, ErrInterruptedEarly)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the interrupted run created %s", dir)
	}

	// An extending resume rewrites config.yaml before it draws the held-out
	// set: interrupted there, it says so instead of "nothing was saved".
	done := filepath.Join(t.TempDir(), "done")
	runOK(t, cfg, Options{Dir: done})
	longer := parse(t, smallYAML, "train.steps=30")
	_, err = Run(cancelled, longer, Options{Dir: done, Resume: true})
	if !errors.Is(err, ErrInterruptedEarly) || !strings.Contains(err.Error(), "config.yaml records the extension to 30 steps (-resume continues it)") {
		t.Errorf("an extending resume interrupted before its first step: %v", err)
	}
}

// plantingCtx is a context that calls plant at its first look (Err), then
// never again: something done to the run directory while Run prepares.
type plantingCtx struct {
	context.Context
	plant func()
}

func (c *plantingCtx) Err() error {
	if c.plant != nil {
		c.plant()
		c.plant = nil
	}
	return nil
}

// TestForeignDirRefused: a fresh Run refuses a directory holding a file that
// is not a run's with a *rundir.ForeignError: one there before Run before
// the run is prepared, one that appears while it is prepared under the lock.
// The directory is left holding that file alone, unchanged.
func TestForeignDirRefused(t *testing.T) {
	cfg := parse(t, smallYAML)
	for _, early := range []bool{true, false} {
		dir := t.TempDir()
		plantData := func() {
			if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte("a user's data\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx := &plantingCtx{Context: context.Background(), plant: plantData}
		if early {
			plantData()
			ctx.plant = func() { t.Error("the run was prepared in a directory holding data.txt") }
		}
		_, err := Run(ctx, cfg, Options{Dir: dir})
		var foreign *rundir.ForeignError
		if !errors.As(err, &foreign) || !strings.Contains(err.Error(), `("data.txt")`) {
			t.Errorf("data.txt there before Run %v: %v, want a *rundir.ForeignError naming it", early, err)
		}
		entries, _ := os.ReadDir(dir)
		got, _ := os.ReadFile(filepath.Join(dir, "data.txt"))
		if len(entries) != 1 || string(got) != "a user's data\n" {
			t.Errorf("data.txt there before Run %v: the directory holds %v, data.txt %q", early, entries, got)
		}
	}
}
