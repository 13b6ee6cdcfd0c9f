package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/rundir"
)

// TestRunDirectoryMustBeOwn: train writes a run only into a directory of its
// own: a new one, an existing empty one, or one holding nothing but a stale
// lock or an interrupted write's temporary. A directory holding a user's
// files, given by -run or named after the config, is refused with one line
// naming it and its entries, and left as it was; so is a config whose name
// gives no run directory name (..yaml would train into runs/ itself).
func TestRunDirectoryMustBeOwn(t *testing.T) {
	foreign := "the directory exists and holds files that are not a run's ("
	for _, c := range []struct {
		name    string
		config  string            // the config file's name, in the working directory
		out     string            // -run, or "" for the default run directory
		entries map[string]string // files made in the run directory first (a name ending in / is a directory)
		want    []string          // the refusal, or nil when the run trains
	}{
		{"-run a user's directory", "tiny.yaml", "data", map[string]string{"data.txt": "a user's data\n", rundir.LockFile: "1\n"},
			[]string{"-run data: " + foreign + `"data.txt"); give a new or empty directory`}},
		{"-run a directory like /", "tiny.yaml", "root", map[string]string{"bin/": "", "boot/": "", "dev/": "", "etc/": "", "notes.txt": "keep\n"},
			[]string{"-run root: " + foreign + `"bin", "boot", "dev" and 2 more)`}},
		{"the default directory holds a user's file", "tiny.yaml", "", map[string]string{"data.txt": "a user's data\n"},
			[]string{"run directory runs/tiny (named after the config; -run DIR gives another): " + foreign + `"data.txt")`}},
		{"config named ..yaml", "..yaml", "", nil, []string{`-config ..yaml: the file's name without its extension (".") cannot name the run directory; give one with -run DIR`}},
		{"config named .yaml", ".yaml", "", nil, []string{`-config .yaml: the file's name without its extension ("") cannot name the run directory; give one with -run DIR`}},
		{"-run an empty directory", "tiny.yaml", "empty", map[string]string{}, nil},
		{"-run a directory with a stale lock", "tiny.yaml", "stale", map[string]string{rundir.LockFile: "999999999\n"}, nil},
		{"a hidden config name", ".tiny.yaml", "", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			t.Chdir(work)
			if err := os.WriteFile(c.config, []byte(tinyYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := c.out
			if dir == "" {
				dir = filepath.Join("runs", strings.TrimSuffix(c.config, ".yaml"))
			}
			if c.entries != nil {
				makeEntries(t, dir, c.entries)
			}
			args := []string{"-config", c.config, "-set", "train.steps=5"}
			if c.out != "" {
				args = append(args, "-run", c.out)
			}
			if c.want != nil {
				refusedIn(t, c.name, work, args, c.want...)
				return
			}
			if _, _, err := runCmd(args...); err != nil {
				t.Fatal(err)
			}
			if saved, err := checkpoint.SavedConfig(dir); err != nil || saved.Train.Steps != 5 {
				t.Errorf("the run in %s: %v, steps %d", dir, err, saved.Train.Steps)
			}
			checkRunFiles(t, dir, 5) // the stale lock is gone with the run's own
		})
	}
}

// makeEntries creates dir and, in it, a file of each name in entries with
// its content, or a directory for a name ending in /.
func makeEntries(t *testing.T, dir string, entries map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range entries {
		var err error
		if sub, ok := strings.CutSuffix(name, "/"); ok {
			err = os.Mkdir(filepath.Join(dir, sub), 0o755)
		} else {
			err = os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
