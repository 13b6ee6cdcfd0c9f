package safefile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteOutputRefuses pins the output rule: every case is refused with a
// message naming the path and the reason, and leaves what was at the path
// untouched; a guard's refusal is the caller's own, told whether the path
// exists.
func TestWriteOutputRefuses(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	other := filepath.Join(dir, "other")
	for _, d := range []string{run, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ckpt := filepath.Join(run, "checkpoint.safetensors")
	guarded := filepath.Join(run, "guarded.txt")
	for _, f := range []string{ckpt, guarded, filepath.Join(other, "input.bin")} {
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
	guard := func(path string, exists bool) error {
		if strings.HasPrefix(filepath.Base(path), "guarded") {
			return fmt.Errorf("refusing to write %s: guarded, exists %v", path, exists)
		}
		return nil
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"the input checkpoint", ckpt, "it is the input " + ckpt},
		{"the input spelled differently", filepath.Join(run, "..", "run", "checkpoint.safetensors"), "it is the input " + ckpt},
		{"a hard link of the input", hardLink, "it is the input " + ckpt},
		{"another input", filepath.Join(other, "input.bin"), "it is the input"},
		{"what the guard refuses", guarded, "guarded, exists true"},
		{"what the guard refuses, not there yet", filepath.Join(run, "guarded.png"), "guarded, exists false"},
		{"an input not there yet", missing, "it is an input (read from there when it exists)"},
		{"an input not there yet, spelled differently", filepath.Join(run, "..", "other", ".", "tokenizer.json"), "it is an input"},
		{"a symlink", symlink, "it is a symlink, not a regular file"},
		{"a named pipe", fifo, "it is a named pipe, not a regular file"},
		{"a directory", other, "it is a directory, not a regular file"},
	} {
		before := contents(c.path)
		err := WriteOutput(c.path, inputs, guard, func(w io.Writer) error {
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

// TestWriteOutputWrites: a new path and an existing regular output are
// written, atomically (no temporary left).
func TestWriteOutputWrites(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"heads.png", "heads.png"} {
		path := filepath.Join(dir, name)
		if err := WriteOutput(path, nil, nil, func(w io.Writer) error {
			_, err := io.WriteString(w, "new")
			return err
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := os.ReadFile(path); string(got) != "new" {
			t.Errorf("%s holds %q", name, got)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
