package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/rundir"
)

// TestFresh: -fresh moves a finished run aside whole to DIR.old-1, then
// DIR.old-2, saying so, and trains anew in DIR; into a directory that holds
// no run it moves nothing and says nothing.
func TestFresh(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	base := t.TempDir()
	want, dir := filepath.Join(base, "want"), filepath.Join(base, "run")
	for _, d := range []string{want, dir} {
		if out, _, err := runCmd("-config", cfg, "-run", d, "-set", "train.steps=5"); err != nil || strings.Contains(out, "-fresh") {
			t.Fatalf("%v, printed %q", err, out)
		}
	}
	makeEntries(t, dir, map[string]string{"heads.png": "the old run's picture"})
	for n := 1; n <= 2; n++ {
		out, _, err := runCmd("-config", cfg, "-run", dir, "-fresh", "-set", "train.steps=5")
		aside := dir + ".old-" + strconv.Itoa(n)
		if err != nil || !strings.HasPrefix(out, "-fresh: moved the run that was in "+dir+" to "+aside+"\n") {
			t.Fatalf("-fresh %d: %v, printed:\n%s", n, err, out)
		}
		sameFiles(t, want, aside, runFiles...)
		sameFiles(t, want, dir, runFiles...)
	}
	if _, err := os.Stat(filepath.Join(dir+".old-1", "heads.png")); err != nil {
		t.Errorf("the old run's own file did not move with it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "heads.png")); !os.IsNotExist(err) {
		t.Errorf("the new run's directory holds the old run's file: %v", err)
	}
}

// TestOldRunFlags: the forms the README and scripts used keep working:
// -out DIR (with a note naming -run) and -resume DIR; -resume -run DIR and
// -resume=DIR continue the run the same way (each extends it by two steps).
func TestOldRunFlags(t *testing.T) {
	cfg := writeConfig(t, tinyYAML)
	dir := filepath.Join(t.TempDir(), "run")
	_, stderr, err := runCmd("-config", cfg, "-out", dir, "-set", "train.steps=5")
	if err != nil || stderr != "note: -out is now called -run (the old name still works)\n" {
		t.Fatalf("-out: %v, stderr %q", err, stderr)
	}
	for i, resume := range [][]string{{"-resume", dir}, {"-resume", "-run", dir}, {"-resume=" + dir}} {
		steps := 7 + 2*i
		out, _, err := runCmd(append(resume, "-set", "train.steps="+strconv.Itoa(steps))...)
		if err != nil || !strings.HasPrefix(out, "resuming "+dir+" ") {
			t.Fatalf("%q: %v, printed:\n%s", resume, err, out)
		}
		if _, step, err := checkpoint.Peek(filepath.Join(dir, rundir.CheckpointFile)); err != nil || step != steps {
			t.Errorf("%q: the checkpoint is of step %d (%v), want %d", resume, step, err, steps)
		}
	}
}
