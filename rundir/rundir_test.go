package rundir

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/runlog"
)

// TestRefuseRunFile: the output rule with the run-file rule, as the
// commands apply it, refuses a run's file in a directory holding a run
// (there or not yet) with a message naming the path and the file, and
// leaves what was there untouched.
func TestRefuseRunFile(t *testing.T) {
	run := t.TempDir()
	for _, name := range []string{CheckpointFile, ConfigFile, runlog.MetricsFile, StateFile(7)} {
		if err := os.WriteFile(filepath.Join(run, name), []byte("precious "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file string
	}{
		{"a run's checkpoint", CheckpointFile},
		{"a run's config", ConfigFile},
		{"a run's metrics", runlog.MetricsFile},
		{"a run's head roles, not written yet", runlog.RolesFile},
		{"a run's state", StateFile(7)},
		{"a new best file in a run", BestFile},
	} {
		path := filepath.Join(run, c.file)
		before, _ := os.ReadFile(path)
		err := safefile.WriteOutput(path, nil, RefuseRunFile, func(w io.Writer) error {
			_, err := io.WriteString(w, "PNG")
			return err
		})
		msgtest.Refusal(t, c.name, err, "refusing to write "+path+": "+c.file+" is a file of a training run")
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("%s: %s changed", c.name, path)
		}
	}
}

// TestRefuseRunFileOutsideARun: a run file's name outside any run is an
// ordinary output, written.
func TestRefuseRunFileOutsideARun(t *testing.T) {
	path := filepath.Join(t.TempDir(), ConfigFile)
	if err := safefile.WriteOutput(path, nil, RefuseRunFile, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("%s holds %q", path, got)
	}
}

// TestLock: a second Acquire of a held directory fails at once naming the
// holder's pid, even from the same process (flock locks belong to the open
// file, not the process); after Release, and over a lock file left by a dead
// process, Acquire succeeds.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte("999999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := Acquire(dir)
	if err != nil {
		t.Fatalf("over a stale lock file: %v", err)
	}
	_, err = Acquire(dir)
	want := "run directory " + dir + " is in use by pid " + strconv.Itoa(os.Getpid())
	if err == nil || !errors.Is(err, ErrInUse) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("second Acquire: %v, want %s", err, want)
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	again.Release()
}

// TestCheckDir: a dangling symlink is named as such.
func TestCheckDir(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "out")
	if err := os.Symlink(filepath.Join(dir, "gone"), link); err != nil {
		t.Fatal(err)
	}
	want := "run directory " + link + " is a dangling symlink (to " + filepath.Join(dir, "gone") + ", which does not exist)"
	if err := CheckDir(link); err == nil || err.Error() != want {
		t.Errorf("dangling symlink: %v, want %s", err, want)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if err := CheckDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("a file: %v", err)
	}
	if err := CheckDir(filepath.Join(dir, "missing")); err != nil {
		t.Errorf("missing: %v", err)
	}
}

// TestCheckOnlyRunFiles: a directory for a new run may be missing, empty,
// or hold only a run's files (a stale lock, an interrupted write's
// temporary, a run's data); anything else is refused with one line naming
// the directory and at most three entries, escaped, and how many more.
func TestCheckOnlyRunFiles(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []string // created in the directory; nil: the directory is missing, "x/": a subdirectory
		want    string   // "" when the directory is accepted
	}{
		{"missing", nil, ""},
		{"empty", []string{}, ""},
		{"stale lock and a temporary", []string{LockFile, ".checkpoint.safetensors.tmp-123"}, ""},
		{"a run's files", []string{ConfigFile, runlog.MetricsFile, StateFile(5)}, ""},
		{"a user's file beside a lock", []string{LockFile, "data.txt"}, `: the directory exists and holds files that are not a run's ("data.txt"); give a new or empty directory`},
		{"a subdirectory", []string{"src/"}, `("src")`},
		{"many entries", []string{"bin/", "boot/", "dev/", "etc/", "home/", ConfigFile}, `("bin", "boot", "dev" and 2 more)`},
		{"a name that drives the terminal", []string{"\x1b]0;pwned\a"}, `("\x1b]0;pwned\a")`},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		if c.entries != nil {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range c.entries {
			var err error
			if name, ok := strings.CutSuffix(e, "/"); ok {
				err = os.Mkdir(filepath.Join(dir, name), 0o755)
			} else {
				err = os.WriteFile(filepath.Join(dir, e), []byte("x"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		err := CheckOnlyRunFiles(dir)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want it accepted", c.name, err)
			}
			continue
		}
		var foreign *ForeignError
		if !errors.As(err, &foreign) || !strings.HasPrefix(err.Error(), "run directory "+dir+": ") || !strings.Contains(err.Error(), c.want) || strings.ContainsAny(err.Error(), "\n\x1b\a") {
			t.Errorf("%s: %v, want a one-line *ForeignError naming %s and containing %s", c.name, err, dir, c.want)
		}
	}
}
