package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/cli/clitest"
	"github.com/attnscope/attnscope/rundir"
)

// readmeNotRun names the configs whose README train lines no test runs as
// written, and why; TestDocCommandsParse still parses those lines.
var readmeNotRun = map[string]string{
	"configs/induction.yaml": "4-6 s of training; the committed testdata/induction is its run",
	"configs/sort.yaml":      "13-20 s of training",
	"configs/text.yaml":      "about 40 s of training, on a file the README writes first",
	"configs/lengths.yaml":   "about 8 s of training",
	"configs/llama.yaml":     "about 15 s of training",
	"configs/finetune.yaml":  "needs GPT-2 downloaded",
}

// TestREADMETrainCommands: every other train line of the README runs as
// written, in the README's order, from a directory holding the project's
// configs/: the quick start's copy run, then the tour's reverse run, copy-h8
// with 8 heads, its resume (a finished run: nothing to do), its extension to
// 2000 steps and the -fresh start over that moves runs/copy aside. Each
// exits 0 with nothing on stderr and leaves the run its line says.
func TestREADMETrainCommands(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lines := clitest.READMECommands(t, root, "train")
	t.Chdir(t.TempDir())
	if err := os.Symlink(filepath.Join(root, "configs"), "configs"); err != nil {
		t.Fatal(err)
	}
	for _, c := range lines {
		if why, ok := readmeNotRun[configOf(c.Args)]; ok {
			t.Logf("%s: not run (%s)", c.Where, why)
			continue
		}
		if _, stderr, err := runCmd(c.Args...); err != nil || stderr != "" {
			t.Errorf("%s: train %s: %v %s", c.Where, strings.Join(c.Args, " "), err, stderr)
		}
	}
	for dir, want := range map[string][2]int{"runs/copy": {4, 1000}, "runs/copy.old-1": {4, 1000}, "runs/reverse": {4, 1000}, "runs/copy-h8": {8, 2000}} {
		cfg, err := rundir.LoadConfig(filepath.Join(dir, "config.yaml"), nil)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		if got := [2]int{cfg.Model.Heads, cfg.Train.Steps}; got != want {
			t.Errorf("%s: heads and steps %v, want %v", dir, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "state-"+strconv.Itoa(want[1])+".safetensors")); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// configOf is the value of -config in args, "" when there is none.
func configOf(args []string) string {
	if i := slices.Index(args, "-config"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}
