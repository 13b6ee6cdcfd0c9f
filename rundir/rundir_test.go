package rundir

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/attnscope/attnscope/runlog"
)

// TestWriteOutputRefuses pins the output rule: every case is refused with a
// message naming the path and the reason, and leaves what was at the path
// untouched.
func TestWriteOutputRefuses(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	other := filepath.Join(dir, "other")
	for _, d := range []string{run, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := filepath.Join(run, CheckpointFile)
	for _, f := range []string{ckpt, filepath.Join(run, ConfigFile), filepath.Join(run, runlog.MetricsFile), filepath.Join(run, StateFile(7)), filepath.Join(other, "input.bin")} {
		if err := os.WriteFile(f, []byte("precious "+f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hardLink := filepath.Join(other, "link.png")
	if err := os.Link(ckpt, hardLink); err != nil {
		t.Fatal(err)
	}
	symlink := filepath.Join(other, "sym.png")
	if err := os.Symlink(filepath.Join(other, "input.bin"), symlink); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(other, "fifo.png")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(other, "tokenizer.json") // an input read when it exists
	inputs := []string{ckpt, filepath.Join(other, "input.bin"), missing}
	for _, c := range []struct {
		name, path, want string
	}{
		{"the input checkpoint", ckpt, "it is the input " + ckpt},
		{"the input spelled differently", filepath.Join(run, "..", "run", CheckpointFile), "it is the input " + ckpt},
		{"a hard link of the input", hardLink, "it is the input " + ckpt},
		{"another input", filepath.Join(other, "input.bin"), "it is the input"},
		{"a run's config", filepath.Join(run, ConfigFile), "config.yaml is a file of a training run"},
		{"a run's metrics", filepath.Join(run, runlog.MetricsFile), "metrics.jsonl is a file of a training run"},
		{"a run's head roles, not written yet", filepath.Join(run, runlog.RolesFile), "roles.jsonl is a file of a training run"},
		{"a run's state", filepath.Join(run, StateFile(7)), "state-7.safetensors is a file of a training run"},
		{"a new best file in a run", filepath.Join(run, BestFile), "best.safetensors is a file of a training run"},
		{"an input not there yet", missing, "it is an input (read from there when it exists)"},
		{"an input not there yet, spelled differently", filepath.Join(run, "..", "other", ".", "tokenizer.json"), "it is an input"},
		{"a symlink", symlink, "it is a symlink, not a regular file"},
		{"a named pipe", fifo, "it is a named pipe, not a regular file"},
		{"a directory", other, "it is a directory, not a regular file"},
	} {
		before := contents(c.path)
		err := WriteOutput(c.path, inputs, func(w io.Writer) error {
			_, err := io.WriteString(w, "PNG")
			return err
		})
		if err == nil || !strings.HasPrefix(err.Error(), "refusing to write "+c.path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want refusing to write %s: ...%s", c.name, err, c.path, c.want)
		}
		if after := contents(c.path); after != before {
			t.Errorf("%s: %s changed", c.name, c.path)
		}
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the named pipe was replaced: %v %v", info, err)
	}
}

// contents is the file at path if it is regular, else its type.
func contents(path string) string {
	info, err := os.Lstat(path)
	if err != nil {
		return err.Error()
	}
	if !info.Mode().IsRegular() {
		return info.Mode().Type().String()
	}
	raw, _ := os.ReadFile(path)
	return string(raw)
}

// TestWriteOutputWrites: a new path, an existing regular output and a run
// file name outside any run are written, atomically (no temporary left).
func TestWriteOutputWrites(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"heads.png", "heads.png", ConfigFile} {
		path := filepath.Join(dir, name)
		if err := WriteOutput(path, nil, func(w io.Writer) error {
			_, err := io.WriteString(w, "new")
			return err
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := os.ReadFile(path); string(got) != "new" {
			t.Errorf("%s holds %q", name, got)
		}
		if err := os.Remove(path); name == ConfigFile && err != nil {
			t.Fatal(err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
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
