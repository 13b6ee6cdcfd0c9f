package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
)

// TestTextPromptIsCharacters: a model trained on a text file takes -prompt
// as characters and writes characters after it; a character the file never
// had is a one-line error naming it; held-out examples print as text.
func TestTextPromptIsCharacters(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("func (b *Buffer) Len() int { return len(b.buf) }\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := rundir.ParseConfig("text.yaml", []byte(`
task: {name: text, path: `+text+`, length: 16}
model: {d_model: 16, heads: 2, layers: 1, position: alibi, window: 16}
train: {batch_size: 8, steps: 30, log_every: 0, eval_every: 10, eval_size: 16, checkpoint_every: 30}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: run}); err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(run, "checkpoint.safetensors")
	out, err := sample(t, "-checkpoint", ck, "-prompt", "func (b", "-n", "40", "-temperature", "0.8")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSuffix(out, "\n")
	if !strings.HasPrefix(line, "func (b") || utf8.RuneCountInString(line) != len("func (b")+40 {
		t.Errorf("continuation %q: want the prompt then 40 characters", line)
	}
	if _, err := sample(t, "-checkpoint", ck, "-prompt", "func é"); err == nil || !strings.Contains(err.Error(), `character "é"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a character outside the vocabulary: %v", err)
	}
	out, err = sample(t, "-checkpoint", ck, "-samples", "2")
	if err != nil || strings.Count(out, "     file    \"") != 2 || !strings.Contains(out, "characters right") {
		t.Errorf("held-out text examples: %v\n%s", err, out)
	}
	if err := os.Remove(text); err != nil {
		t.Fatal(err)
	}
	if _, err := sample(t, "-checkpoint", ck, "-samples", "1"); err == nil || !strings.Contains(err.Error(), "task.path") {
		t.Errorf("the text file gone: %v", err)
	}
}
