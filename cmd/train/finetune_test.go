package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// fineTuneYAML fine-tunes the model in %s on the text in %s.
const fineTuneYAML = `seed: 3
init_from: %s
task: {name: text, path: %s, length: 16}
train: {batch_size: 4, steps: 20, lr: 1.0e-3, log_every: 5, eval_every: 10, eval_size: 8, checkpoint_every: 5, probes: on}
`

// nanoGPTDir copies open/nanogpt's fixture (ckpt.pt beside its meta.pkl)
// into a new directory.
func nanoGPTDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"bias/ckpt.pt", "meta.pkl"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "open", "nanogpt", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const corpus = "../../open/nanogpt/testdata/corpus.txt"

// TestFineTuneErrors: what train cannot fine-tune is refused in one line
// naming it, before anything is written.
func TestFineTuneErrors(t *testing.T) {
	pre := nanoGPTDir(t)
	own := filepath.Join(t.TempDir(), "own")
	if _, _, err := runCmd("-config", writeConfig(t, tinyYAML), "-run", own); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(t.TempDir(), "foreign.txt")
	if err := os.WriteFile(foreign, []byte(strings.Repeat("Ωμέγα ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	cases := []struct {
		name, from, text string
		sets             []string
		want             []string
	}{
		{"no such model", missing, corpus, nil, []string{missing + ": no such file or directory; fine-tuning starts from a Hugging Face model directory or a nanoGPT ckpt.pt"}},
		{"no tokenizer", "../../open/hf/testdata/distil", corpus, nil, []string{"distil: has no tokenizer", "the text cannot be turned into its tokens"}},
		{"the lab's own run", own, corpus, nil, []string{own + ": not a model trained elsewhere"}},
		{"no such text", pre, missing, nil, []string{"task.path = ", "gone", "no such file"}},
		{"characters the model lacks", pre, foreign, nil, []string{"tokenizing with characters (49 tokens)", `character "Ω"`}},
		{"a model key", pre, corpus, []string{"model.layers=3"}, []string{"model.layers: given 3, pretrained 2"}},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "run")
		args := []string{"-config", writeConfig(t, fmt.Sprintf(fineTuneYAML, c.from, c.text)), "-run", out}
		for _, s := range c.sets {
			args = append(args, "-set", s)
		}
		stdout, _, err := runCmd(args...)
		msgtest.Refusal(t, c.name, err, c.want...)
		if _, statErr := os.Stat(out); stdout != "" || statErr == nil {
			t.Errorf("%s: a refused run printed %q, wrote %s (%v)", c.name, stdout, out, statErr)
		}
	}
}

// TestFineTuneKilledAndResumed: a fine-tuning run killed at random moments
// (checkpoints every 5 steps; before its first, it reads the pretrained
// model again) and resumed until it finishes ends byte-identical to a run
// never stopped, its tokenizer copied.
func TestFineTuneKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command in subprocesses")
	}
	cfg := writeConfig(t, strings.Replace(fmt.Sprintf(fineTuneYAML, nanoGPTDir(t), corpus), "steps: 20", "steps: 300", 1))
	killUntilDone(t, cfg, initfrom.CopyName("meta.pkl"))
}

// TestFineTuneResumeWithConfig: -resume DIR -config FILE of a fine-tuning
// run reads the config over the pretrained model the run recorded, so it
// extends the run with the pretrained directory gone; a config naming
// another model is refused, naming init_from. The first run's summary
// lists the copy of the tokenizer it made, and its stderr the memory
// estimate part by part (rundir.Config.Memory).
func TestFineTuneResumeWithConfig(t *testing.T) {
	pre := nanoGPTDir(t)
	cfg := writeConfig(t, fmt.Sprintf(fineTuneYAML, pre, corpus))
	dir := filepath.Join(t.TempDir(), "run")
	out, stderr, err := runCmd("-config", cfg, "-run", dir)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rundir.LoadRunConfig(filepath.Join(dir, rundir.ConfigFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "memory: an estimated " + run.Memory().String() + "\n"; !strings.Contains(stderr, want) || !strings.Contains(want, "Adam moments") {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if !strings.Contains(out, "files: config.yaml "+initfrom.CopyName("meta.pkl")+" metrics.jsonl") {
		t.Errorf("the summary does not list the tokenizer's copy after the config:\n%s", out)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(pre, moved); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd("-resume", dir, "-config", cfg, "-set", "train.steps=25"); err != nil {
		t.Fatalf("extending with the pretrained directory gone: %v", err)
	}
	if ck, err := checkpoint.Load(filepath.Join(dir, rundir.CheckpointFile)); err != nil || ck.Step != 25 {
		t.Fatalf("after the extension: %v, %v", ck, err)
	}
	other := writeConfig(t, fmt.Sprintf(fineTuneYAML, moved, corpus))
	_, _, err = runCmd("-resume", dir, "-config", other, "-set", "train.steps=30")
	msgtest.Refusal(t, "another model", err, "init_from: saved "+pre+", given "+moved)
}

// TestFineTuneSummarySaysProbesOff: a fine-tuning run probes nothing by
// default, and its summary says so and how to turn them on.
func TestFineTuneSummarySaysProbesOff(t *testing.T) {
	yml := strings.Replace(fmt.Sprintf(fineTuneYAML, nanoGPTDir(t), corpus), ", probes: on", "", 1)
	out := filepath.Join(t.TempDir(), "run")
	stdout, _, err := runCmd("-config", writeConfig(t, yml), "-run", out, "-set", "train.steps=10")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, ", head roles off (train.probes: on runs them), saving ") {
		t.Errorf("summary %q does not say the probes were off", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, runlog.RolesFile)); err == nil {
		t.Errorf("%s was written", runlog.RolesFile)
	}
}
