package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
)

// TestFineTunedRunCopyIsNoLink (issue 42, case 6c): a fine-tuning run's
// init-vocab.json replaced by a symbolic link (to a file of the very same
// bytes, so that only the link rule can refuse it) is not read: one line
// naming it, as for every file of a run directory.
func TestFineTunedRunCopyIsNoLink(t *testing.T) {
	dir := fineTunedRun(t)
	if err := run([]string{dir, "-summary", "-examples", "1"}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatalf("the run as written: %v", err)
	}
	copied := filepath.Join(dir, initfrom.CopyName("vocab.json"))
	elsewhere := filepath.Join(t.TempDir(), "vocab.json")
	if err := os.Rename(copied, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, copied); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run([]string{dir, "-summary", "-examples", "1"}, &stdout, &stderr)
	msgtest.Refusal(t, "a linked init-vocab.json", err, copied+" is a symbolic link; refusing to read through it")
	if stdout.Len() > 0 {
		t.Errorf("printed %q before refusing", stdout.String())
	}
}

// TestTrainingGraphOfFineTunedRun: -training-graph of a fine-tuning run
// is the graph it trained, its windows of task.length 8, not the model's
// context of 32 (which made GPT-2 small's fine-tuning, batch 1 of 8
// tokens, refused as needing 12.5 GiB).
func TestTrainingGraphOfFineTunedRun(t *testing.T) {
	dir := fineTunedRun(t)
	out := string(runOK(t, dir, "-graph", "-training-graph"))
	if want := "batch 2, length 8: training graph"; !strings.Contains(out, want) {
		t.Errorf("-training-graph of a run of batch 2 and task.length 8:\n%.300s\nwant %q", out, want)
	}
}

// fineTunedRun fine-tunes open/hf's distil GPT-2 (given a byte-level
// vocab.json of its 96 ids and no merges) for a few steps, and returns the
// run directory, which holds the copies of vocab.json and merges.txt.
func fineTunedRun(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	pre := filepath.Join(tmp, "pretrained")
	if err := os.Mkdir(pre, 0o755); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{"Ġ": 0, "Ċ": 1}
	for b := byte(33); b <= 126; b++ {
		vocab[string(rune(b))] = len(vocab)
	}
	vocabJSON, err := json.Marshal(vocab)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"vocab.json": vocabJSON, "merges.txt": []byte("#version: 0.2\n")}
	for _, name := range []string{"config.json", "model.safetensors"} {
		if files[name], err = os.ReadFile(filepath.Join("..", "..", "open", "hf", "testdata", "distil", name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, raw := range files {
		if err := os.WriteFile(filepath.Join(pre, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := filepath.Join(tmp, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the cat sat on the mat\nand the dog lay by the door\n", 8)), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(tmp, "ft.yaml")
	yml := fmt.Sprintf("seed: 1\ninit_from: %s\ntask: {name: text, path: %s, length: 8}\ntrain: {batch_size: 2, steps: 2, log_every: 1, eval_every: 2, eval_size: 2, checkpoint_every: 2}\n", pre, text)
	if err := os.WriteFile(config, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rundir.LoadConfigFrom(config, nil, func(from string) (rundir.Pretrained, error) {
		p, err := train.OpenPretrained(from, nil)
		if err != nil {
			return rundir.Pretrained{}, err
		}
		return p.Config(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}
