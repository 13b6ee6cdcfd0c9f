package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// textLines is a text whose lines can be shuffled without changing its
// characters or size: only the recorded SHA-256 tells the two apart.
var textLines = strings.Repeat("the cat sat on the mat\nand the dog lay by the door\n", 8)

// textRunConfig is a small text run on the file at path.
// textRunConfig is a small text run on the file at path, of steps steps,
// with more -set overrides.
func textRunConfig(t *testing.T, path string, steps string, sets ...string) rundir.Config {
	return parse(t, `
task: {name: text, path: `+path+`, length: 8}
model: {d_model: 8, heads: 2, layers: 1}
train: {batch_size: 4, steps: 4, log_every: 0, eval_every: 0, checkpoint_every: 4}
`, append([]string{"train.steps=" + steps}, sets...)...)
}

// TestResumeChecksTheText: a resume reads the text where the run recorded
// it and refuses other content (the same characters, shuffled lines) with
// the file and both digests; Options.Data finds a moved copy, and the run
// then ends bit-identical to one never stopped.
func TestResumeChecksTheText(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	writeText(t, text, textLines)
	whole := filepath.Join(dir, "whole")
	runOK(t, textRunConfig(t, text, "8"), Options{Dir: whole})
	run := filepath.Join(dir, "run")
	runOK(t, textRunConfig(t, text, "4"), Options{Dir: run})

	saved, err := checkpoint.SavedConfig(run)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(textLines, "\n")
	writeText(t, text, lines[1]+lines[0]+strings.Join(lines[2:], ""))
	_, err = Run(context.Background(), withSteps(saved, 8), Options{Dir: run, Resume: true})
	if err == nil || !strings.Contains(err.Error(), text) || !strings.Contains(err.Error(), "content differs from what training read") {
		t.Fatalf("resume over a shuffled file: %v", err)
	}
	moved := filepath.Join(dir, "moved.txt")
	writeText(t, moved, textLines)
	runOK(t, withSteps(saved, 8), Options{Dir: run, Resume: true, Data: moved})
	if a, b := weightsOf(t, whole), weightsOf(t, run); a != b {
		t.Errorf("the resumed run's weights (%.12s) differ from the uninterrupted run's (%.12s)", b, a)
	}
}

// weightsOf is the digest of the weights of the run in dir.
func weightsOf(t *testing.T, dir string) string {
	t.Helper()
	digest, err := model.WeightsDigest(lastCheckpoint(t, dir).Model)
	if err != nil {
		t.Fatal(err)
	}
	return digest
}

// TestResumeRecordsTheText: a run written before runs recorded their text
// file resumes with one notice that the content cannot be checked, and
// records the file from then on.
func TestResumeRecordsTheText(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	writeText(t, "text.txt", textLines)
	runOK(t, textRunConfig(t, "text.txt", "4"), Options{Dir: "run"})
	unrecord(t, "run")
	saved, err := checkpoint.SavedConfig("run")
	if err != nil {
		t.Fatal(err)
	}
	var notices bytes.Buffer
	runOK(t, withSteps(saved, 8), Options{Dir: "run", Resume: true, Notices: &notices})
	if !strings.Contains(notices.String(), "recorded no SHA-256 of its text file, so the content of "+filepath.Join(dir, "text.txt")+" cannot be checked") {
		t.Errorf("notices %q", notices.String())
	}
	ck, err := checkpoint.Load(filepath.Join("run", rundir.CheckpointFile))
	if err != nil || !ck.Config.Task.File.Recorded() || ck.Step != 8 {
		t.Fatalf("after the resume: %v, %+v", err, ck.Config.Task)
	}
	yml, err := rundir.LoadRunConfig(filepath.Join("run", rundir.ConfigFile), nil)
	if err != nil || yml.Task.File != ck.Config.Task.File {
		t.Errorf("config.yaml records %+v, the checkpoint %+v (%v)", yml.Task.File, ck.Config.Task.File, err)
	}
}

// unrecord makes the run in dir one written before runs recorded their
// text file: no task.file in its checkpoint or config.yaml.
func unrecord(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, rundir.CheckpointFile)
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file = sttest.EditConfig(t, file, func(run map[string]any) { delete(run["task"].(map[string]any), "file") })
	writeText(t, path, string(file))
	yml, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	skip := false
	for _, line := range strings.SplitAfter(string(yml), "\n") {
		if strings.HasPrefix(line, "  file:") {
			skip = true
			continue
		}
		if skip && strings.HasPrefix(line, "    ") {
			continue
		}
		skip = false
		kept = append(kept, line)
	}
	writeText(t, filepath.Join(dir, rundir.ConfigFile), strings.Join(kept, ""))
}

func withSteps(cfg rundir.Config, steps int) rundir.Config {
	cfg.Train.Steps = steps
	return cfg
}

func writeText(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
