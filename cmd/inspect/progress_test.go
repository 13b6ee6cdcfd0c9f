package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// runProgress runs the command with progress on a terminal line of its
// own (stderr's, 100 columns) and without, and returns both stdouts and the
// progress written.
func runProgress(t *testing.T, args ...string) (with, without []byte, shown string) {
	t.Helper()
	var out, plain, errs, plainErrs bytes.Buffer
	if err := runWith(args, &plain, &plainErrs, nil); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if err := runWith(args, &out, &errs, progress.NewLine(&errs, true, 100)); err != nil {
		t.Fatalf("run %q with progress: %v", args, err)
	}
	return out.Bytes(), plain.Bytes(), errs.String()
}

// TestProgressOnStderrOnly: inspect reports each phase of its work on
// stderr's line (scoring the examples, each -circuits stage, the heads
// ablated, of the model or of those -layer and -head pick, the files
// written), clears it at the end, and writes to stdout
// exactly what it writes without progress.
func TestProgressOnStderrOnly(t *testing.T) {
	plainEnv(t, "100")
	png := filepath.Join(t.TempDir(), "heads.png")
	for _, c := range []struct {
		args   []string
		phases []string
	}{
		{[]string{"-checkpoint", inductionCheckpoint, "-ablate", "-circuits", "-summary"},
			[]string{"scoring 64 examples", "circuits: head weights", "circuits: composition [", "1/1 layer pairs", "circuits: copying", "circuits: prefix matching [", "/64 sequences", "circuits: activation patching", "/8 heads", "ablating heads", "circuits: logit lens"}},
		// The per-head work on the heads -layer and -head pick counts those.
		{[]string{"-checkpoint", inductionCheckpoint, "-ablate", "-circuits", "-summary", "-layer", "1", "-head", "0,2-3"},
			[]string{"circuits: activation patching [", "0/3 heads", "ablating heads [", "3/3 heads"}},
		{[]string{"-checkpoint", inductionCheckpoint, "-examples", "4", "-png", png},
			[]string{"scoring 4 examples", "writing " + png}},
	} {
		with, without, shown := runProgress(t, c.args...)
		if !bytes.Equal(with, without) {
			t.Errorf("%q: stdout with progress differs from stdout without:\n%s\n---\n%s", c.args, with, without)
		}
		for _, phase := range c.phases {
			if !strings.Contains(shown, "\r"+phase) && !strings.Contains(shown, phase) {
				t.Errorf("%q: no progress of %q: %q", c.args, phase, shown)
			}
		}
		if !strings.HasPrefix(shown, "\r") || !strings.HasSuffix(shown, "\r\x1b[K") || strings.Contains(shown, "\n") {
			t.Errorf("%q: progress is not one line redrawn and cleared: %q", c.args, shown)
		}
	}
}

// TestProgressReadingWeights: opening a Hugging Face directory reports the
// weights' bytes read, and a note written while the line is up clears it
// first rather than running on after it.
func TestProgressReadingWeights(t *testing.T) {
	plainEnv(t, "100")
	dir := opentest.GPT2Dir(t, model.Config{Context: 16, DModel: 8, Heads: 2, Layers: 1, DFF: 16})
	_, _, shown := runProgress(t, "-checkpoint", dir, "-tokens", "1 2 3", "-summary")
	for _, want := range []string{"reading " + dir, "\rreading weights [", "MiB/1.5 MiB", "\r\x1b[Knote: " + dir + " has no tokenizer files"} {
		if !strings.Contains(shown, want) {
			t.Errorf("no %q in the progress: %q", want, shown)
		}
	}
}
