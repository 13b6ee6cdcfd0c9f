package main

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// TestMain lets the test binary stand in for the command: the subprocess
// tests run it with ATTNSCOPE_TRAIN_MAIN=1 to get main() itself, signals and
// exit codes included.
func TestMain(m *testing.M) {
	if os.Getenv("ATTNSCOPE_TRAIN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const tinyYAML = `seed: 3
task: {name: copy, length: 3, symbols: 4}
model: {d_model: 8, heads: 2, layers: 1, dropout: 0.1}
train: {batch_size: 4, steps: 40, lr: 1.0e-2, schedule: cosine, warmup_steps: 5, weight_decay: 0.1,
        log_every: 5, eval_every: 10, eval_size: 16, checkpoint_every: 5}
`

func writeConfig(t *testing.T, yml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runCmd(args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	err := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestRunErrors(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	done := filepath.Join(t.TempDir(), "done")
	if _, _, err := runCmd("-config", cfg, "-run", done); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	dangling := filepath.Join(t.TempDir(), "out")
	if err := os.Symlink(filepath.Join(filepath.Dir(dangling), "gone"), dangling); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		// issue 11: it said "mkdir ...: file exists".
		{"dangling symlink -run", []string{"-config", cfg, "-run", dangling}, "run directory " + dangling + " is a dangling symlink (to " + filepath.Join(filepath.Dir(dangling), "gone") + ", which does not exist)"},
		{"unknown flag", []string{"-bogus"}, "flag provided but not defined: -bogus"},
		{"stray argument", []string{"-config", cfg, "extra"}, `unexpected argument "extra" (flags only: a new run's directory is -run DIR, a run to continue -resume DIR; see -h)`},
		{"no config", nil, "missing -config"},
		{"config file missing", []string{"-config", filepath.Join(t.TempDir(), "nope.yaml")}, "nope.yaml"},
		{"bad -set", []string{"-config", cfg, "-set", "model.hedas=8"}, "unknown key model.hedas"},
		{"existing run", []string{"-config", cfg, "-run", done}, done + " already holds a run: continue it with -resume " + done + ", start over with -fresh (the old run moves to " + done + ".old-N), or give another -run DIR"},
		{"resume nothing", []string{"-resume", t.TempDir()}, "holds no run to resume"},
		{"resume other config", []string{"-resume", done, "-config", cfg, "-set", "model.heads=4"}, "model.heads: saved 2, given 4"},
		{"resume with -set only", []string{"-resume", done, "-set", "model.heads=4"}, "the config differs (model.heads: saved 2, given 4); on resume only train.steps may change, and only upward"},
		{"resume lowering steps", []string{"-resume", done, "-set", "train.steps=20"}, "train.steps = 20 is below the saved 40: on resume train.steps may only be raised"},
		{"resume and -run differ", []string{"-resume", done, "-run", other}, "-run " + other + " and -resume " + done + " name different directories"},
		{"-resume= and the argument differ", []string{"-resume=" + done, other}, "-resume=" + done + " and the argument " + other + " name different directories"},
		{"-resume naming no run", []string{"-resume"}, "-resume: which run? give its directory (-resume runs/copy)"},
		{"-fresh with -resume", []string{"-resume", done, "-fresh"}, "-fresh starts a new run and -resume continues one"},
		{"a second argument", []string{"-resume", done, other}, `unexpected argument "` + other + `" (one run directory, already given as "` + done + `"; see -h)`},
		{"resume a file", []string{"-resume", filepath.Join(done, "checkpoint.safetensors")}, "is a file; -resume takes the run directory (-resume " + done + ")"},
		{"a config key as a flag", []string{"-config", cfg, "-steps", "10"}, "(did you mean -set train.steps=10?)"},
		{"-set split at the space", []string{"-config", cfg, "-set", "model.heads", "8"}, "(did you mean -set model.heads=8?)"},
	}
	for _, c := range cases {
		out, _, err := runCmd(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line containing %q", c.name, err, c.want)
		}
		if out != "" {
			t.Errorf("%s: a refused run printed %q", c.name, out)
		}
	}
	out, _, err := runCmd("-h")
	if err != nil || !strings.Contains(out, "usage: train -config FILE") || !strings.Contains(out, "-resume") {
		t.Errorf("-h: %v\n%s", err, out)
	}
}

// TestRunWritesRun: a tiny run into the default directory runs/<config
// name> writes every file, plain log lines (stdout is not a terminal) and the
// summary, both with the evaluation at another length; resuming the
// finished run says so.
func TestRunWritesRun(t *testing.T) {
	cfg := writeConfig(t, strings.Replace(tinyYAML, "checkpoint_every: 5}", "checkpoint_every: 5, eval_lengths: [2]}", 1))
	t.Chdir(t.TempDir())
	out, stderr, err := runCmd("-config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("runs", "tiny")
	for _, f := range []string{rundir.ConfigFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile, rundir.CheckpointFile, rundir.BestFile, "state-40.safetensors"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	for _, want := range []string{
		"training " + cfg + ": task copy, 40 steps, writing runs/tiny\n",
		"step 40/40 (100%)  loss ", "  elapsed ", "step 40/40  eval_loss ", "step 10/40  eval_loss ", "\n  at length 2: eval_loss ",
		"steps 1-40 of 40 in ", "\nof which evaluation ", ", head roles ", ", saving ", "% together)\n",
		"eval at step 40: eval_loss ",
		"run directory: runs/tiny\nfiles: config.yaml metrics.jsonl roles.jsonl circuits.jsonl\n       checkpoint.safetensors best.safetensors state-40.safetensors\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// Four evaluations and the summary each give the figures at length 2.
	if n := strings.Count(out, "\n  at length 2: eval_loss "); n != 5 {
		t.Errorf("%d lines at length 2, want 5:\n%s", n, out)
	}
	if strings.Contains(out, "\r") || stderr != "" {
		t.Errorf("progress bar drawn on a non-terminal, or stderr %q", stderr)
	}
	// The summary fits an 80-column terminal.
	for _, line := range strings.Split(out[strings.Index(out, "steps 1-40"):], "\n") {
		if n := len([]rune(line)); n >= 80 {
			t.Errorf("summary line of %d characters: %q", n, line)
		}
	}
	out, _, err = runCmd("-resume", dir)
	if err != nil || !strings.Contains(out, "already complete (step 40/40)") {
		t.Errorf("resuming a finished run: %v\n%s", err, out)
	}
	// Extending the finished run, without -config: the header says what
	// changed and which overrides were applied.
	out, _, err = runCmd("-resume", dir, "-set", "train.steps=50")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"resuming runs/tiny (task copy), extended from 40 to 50 steps\n" +
			"schedule cosine: the rest of the decay is stretched to end at step 50\n" +
			"resuming from the checkpoint of step 40\n" +
			"with -set train.steps=50\n",
		"steps 41-50 of 50 in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("extending the run: stdout lacks %q:\n%s", want, out)
		}
	}
	if saved, err := checkpoint.SavedConfig(dir); err != nil || saved.Train.Steps != 50 {
		t.Errorf("after extending: steps %d, %v", saved.Train.Steps, err)
	}
	// And with -config naming the run's own file.
	out, _, err = runCmd("-resume", dir, "-config", cfg, "-set", "train.steps=60")
	if err != nil || !strings.Contains(out, "extended from 50 to 60 steps\n") || !strings.Contains(out, "steps 51-60 of 60 in ") {
		t.Errorf("extending with -config: %v\n%s", err, out)
	}
}

// helper runs this test binary as the train command.
func helper(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ATTNSCOPE_TRAIN_MAIN=1")
	return cmd
}

// startHelper starts the command in a subprocess, its stderr kept in a
// buffer; exited delivers cmd.Wait's result, so a test can kill it meanwhile.
func startHelper(t *testing.T, args ...string) (cmd *exec.Cmd, stderr *bytes.Buffer, exited <-chan error) {
	t.Helper()
	cmd, stderr = helper(t, args...), new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return cmd, stderr, done
}

func sameFiles(t *testing.T, want, got string, names ...string) {
	t.Helper()
	for _, name := range names {
		a, err := os.ReadFile(filepath.Join(want, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(got, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == runlog.MetricsFile {
			a, b = dropTiming(t, a), dropTiming(t, b)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs:\n%s\n---\n%s", name, a, b)
		}
	}
}

// dropTiming removes the tokens_per_s field (the only clock-dependent one).
func dropTiming(t *testing.T, metrics []byte) []byte {
	t.Helper()
	var out []byte
	for _, line := range bytes.SplitAfter(metrics, []byte("\n")) {
		if i := bytes.Index(line, []byte(`,"tokens_per_s":`)); i >= 0 {
			line = append(line[:i:i], '}', '\n')
		}
		out = append(out, line...)
	}
	return out
}

// TestKilledAndResumed: the command is killed with SIGKILL at random moments
// (checkpoints every 5 steps, so kills land in the middle of file writes too)
// and resumed with -resume until it finishes; the result must be
// byte-identical to an uninterrupted run: weights, best weights, config, and
// metrics apart from tokens_per_s.
func TestKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in subprocesses")
	}
	killUntilDone(t, writeConfig(t, strings.Replace(tinyYAML, "steps: 40", "steps: 1000", 1)))
}

// killUntilDone runs the config at cfg once whole, then again, killed with
// SIGKILL at random moments and resumed until it finishes, and requires the
// two runs' files (and the extra names) byte-identical.
func killUntilDone(t *testing.T, cfg string, extra ...string) {
	t.Helper()
	want := filepath.Join(t.TempDir(), "want")
	if _, _, err := runCmd("-config", cfg, "-run", want); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "killed")
	rng := rand.New(rand.NewPCG(1, 2))
	args := []string{"-config", cfg, "-run", dir}
	kills := 0
	for attempt := 0; ; attempt++ {
		if attempt == 50 {
			t.Fatal("the run did not finish after 50 attempts")
		}
		cmd, stderr, exited := startHelper(t, args...)
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("run %d: %v: %s", attempt, err, stderr.String())
			}
			sameFiles(t, want, dir, append([]string{rundir.CheckpointFile, rundir.BestFile, rundir.ConfigFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile}, extra...)...)
			t.Logf("finished after %d kills", kills)
			return
		// Kill delays double every 8 attempts, so a slow machine still
		// finishes.
		case <-time.After(time.Duration(10+rng.IntN(150)) * time.Millisecond << (attempt / 8)):
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-exited
			kills++
		}
		if _, err := os.Stat(filepath.Join(dir, rundir.ConfigFile)); err == nil {
			args = []string{"-resume", dir}
		} else {
			// Killed before the run directory existed: start again.
			_ = os.RemoveAll(dir)
		}
	}
}

// TestPlantedLinks: a symlink planted as a run's lock or metrics file (to a
// user's file, or dangling) makes train refuse, naming the link, and leaves
// the target as it was: nothing is written through a link.
func TestPlantedLinks(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	home := t.TempDir()
	precious := filepath.Join(home, "precious.txt")
	for _, c := range []struct {
		name, file string
		resume     bool
		target     string
	}{
		{"lock to a file", "train.lock", false, precious},
		{"lock dangling", "train.lock", false, filepath.Join(home, "created.txt")},
		{"metrics to a file on resume", "metrics.jsonl", true, precious},
	} {
		if err := os.WriteFile(precious, []byte("keep me\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "run")
		if c.resume {
			if _, _, err := runCmd("-config", cfg, "-run", dir, "-set", "train.steps=10"); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, c.file)); err != nil {
				t.Fatal(err)
			}
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, c.file)
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		args := []string{"-config", cfg, "-run", dir}
		if c.resume {
			args = []string{"-resume", dir, "-set", "train.steps=20"}
		}
		_, _, err := runCmd(args...)
		if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s: error %v, want a refusal naming the link %s", c.name, err, c.file)
		}
		if got, _ := os.ReadFile(precious); string(got) != "keep me\n" {
			t.Errorf("%s: the target now holds %q", c.name, got)
		}
		if _, err := os.Lstat(filepath.Join(home, "created.txt")); !os.IsNotExist(err) {
			t.Errorf("%s: a dangling link's target was created", c.name)
		}
	}
}

// TestResumeHeader: the resume header says where the run goes on from: the
// checkpoint's step, or step 1 when no checkpoint was written yet.
func TestResumeHeader(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	dir := filepath.Join(t.TempDir(), "run")
	if _, _, err := runCmd("-config", cfg, "-run", dir, "-set", "train.steps=10"); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd("-resume", dir, "-set", "train.steps=20")
	if err != nil || !strings.Contains(out, "resuming from the checkpoint of step 10") {
		t.Errorf("resume after step 10: %v\n%s", err, out)
	}
	fresh := filepath.Join(t.TempDir(), "run")
	if _, _, err := runCmd("-config", cfg, "-run", fresh, "-set", "train.steps=10"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{rundir.CheckpointFile, rundir.BestFile, "state-10.safetensors"} {
		if err := os.Remove(filepath.Join(fresh, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err = runCmd("-resume", fresh)
	if err != nil || !strings.Contains(out, "no checkpoint yet, starting from step 1") {
		t.Errorf("resume without a checkpoint: %v\n%s", err, out)
	}
}
