package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
)

// readmeBlock returns the fenced block of README.md that starts with the
// line first (without the fences).
func readmeBlock(t *testing.T, first string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	at := strings.Index(text, "```\n"+first)
	if at < 0 {
		t.Fatalf("README.md has no block starting %q", first)
	}
	block := text[at+4:]
	return block[:strings.Index(block, "```")]
}

// TestREADMESamples runs what the README shows and compares the output with
// its samples: the quick start's copy run (configs/copy.yaml, trained here
// as the README's first command does) under inspect -layer 0 -head 0
// -color never, and the worked example's ablation table (the committed
// induction run is configs/induction.yaml's). A change that moves either
// output fails here until the README is updated.
func TestREADMESamples(t *testing.T) {
	cfg, err := rundir.LoadConfig(filepath.Join("..", "..", "configs", "copy.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "runs", "copy")
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	plainEnv(t, "80")
	got := string(runOK(t, "-checkpoint", filepath.Join(dir, "checkpoint.safetensors"), "-layer", "0", "-head", "0", "-color", "never"))
	got = strings.ReplaceAll(got, filepath.Join(dir, "checkpoint.safetensors"), "runs/copy/checkpoint.safetensors")
	if want := readmeBlock(t, "checkpoint runs/copy/checkpoint.safetensors (step 1000)"); got != want {
		t.Errorf("the README's copy sample differs from what inspect prints now:\n--- README\n%s--- inspect\n%s", want, got)
	}

	table := string(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-color", "never"))
	for _, line := range strings.Split(strings.TrimSpace(readmeBlock(t, "layer head  role")), "\n") {
		if !strings.Contains(table, line+"\n") {
			t.Errorf("the README's ablation line %q is not in what inspect -ablate prints:\n%s", line, table)
		}
	}
}
