package main

import (
	"bytes"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"os"
	"path/filepath"
	"testing"
)

// TestWrongKinds: a path of the wrong kind, and a flag that would be
// ignored or cannot do what it says, get one line saying what to pass
// instead.
func TestWrongKinds(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte("seed: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused(t, "a config as -checkpoint", []string{"-checkpoint", config}, "is a run config, not a checkpoint; train from it (go run ./cmd/train -config "+config+")")
	refused(t, "a checkpoint as -run", []string{"-run", testCheckpoint}, "-run "+testCheckpoint+": is a checkpoint file; -run takes its run directory (-run testdata)")
	refused(t, "a file as -run", []string{"-run", config}, "-run "+config+": is a file; -run takes a run directory")
	refused(t, "-ablation without -ablate", []string{"-checkpoint", testCheckpoint, "-ablation", "mean"}, "-ablation is used only with -ablate")
	refused(t, "empty -tokens", []string{"-checkpoint", testCheckpoint, "-tokens", " "}, "-tokens is empty")
	// refused adds a -png of its own, so this one runs directly.
	var out bytes.Buffer
	jpg := filepath.Join(dir, "x.jpg")
	msgtest.Refusal(t, "-png of another format", run([]string{"-checkpoint", testCheckpoint, "-png", jpg}, &out, &out), "writes a PNG image; give a file name ending in .png")
	if _, err := os.Stat(jpg); !os.IsNotExist(err) {
		t.Errorf("-png x.jpg wrote the file (%v)", err)
	}
	refused(t, "-summary with -json", []string{"-checkpoint", testCheckpoint, "-summary", "-json"}, "-summary prints the heads' table alone")
	refused(t, "a mistyped flag", []string{"-checkpont", testCheckpoint}, "(did you mean -checkpoint?)")
	refused(t, "-html with another run's directory", []string{"-checkpoint", testCheckpoint, "-html", filepath.Join(dir, "x.html"), "-run", "../../testdata/induction"},
		"-run ../../testdata/induction is another run: ../../testdata/induction/config.yaml differs from the checkpoint's config in model.d_model (16 in the checkpoint, 32 in the run)", "more")
}
