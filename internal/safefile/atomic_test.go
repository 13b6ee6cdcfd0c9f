package safefile

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pkg/errors"
)

// dirNames lists a directory, to spot leftover temporary files.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomicReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.bin")
	if err := os.WriteFile(path, []byte("old contents, longer than the new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, "new")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "new" {
		t.Errorf("file holds %q, want %q", got, "new")
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the old file's 0600", info.Mode().Perm())
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q, want only state.bin", names)
	}

	fresh := filepath.Join(dir, "fresh.bin")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // larger than the write buffer
	if err := WriteFileAtomic(fresh, func(w io.Writer) error {
		_, err := w.Write(big)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(fresh); err != nil || !bytes.Equal(got, big) {
		t.Errorf("new file: %d bytes, err %v; want the %d bytes written", len(got), err, len(big))
	}
	if info, err := os.Stat(fresh); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v (err %v), want 0644", info.Mode().Perm(), err)
	}
}

// TestWriteFileAtomicFailureKeepsOld fails the write in several ways (an
// error before writing, after writing more than the buffer holds, a panic)
// and checks the old file is byte-identical and no temporary file is left.
func TestWriteFileAtomicFailureKeepsOld(t *testing.T) {
	old := []byte("the previous checkpoint")
	big := bytes.Repeat([]byte{0xAB}, 1<<18)
	cases := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"error before writing", func(io.Writer) error { return errors.New("disk on fire") }},
		{"error after a large write", func(w io.Writer) error {
			if _, err := w.Write(big); err != nil {
				return err
			}
			return errors.New("disk on fire")
		}},
		{"panic", func(w io.Writer) error {
			if _, err := w.Write(big); err != nil {
				return err
			}
			panic("disk on fire")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ckpt.safetensors")
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
			err := func() (err error) {
				defer func() {
					if r := recover(); r != nil {
						err = errors.Errorf("panic: %v", r)
					}
				}()
				return WriteFileAtomic(path, c.write)
			}()
			if err == nil || !strings.Contains(err.Error(), "disk on fire") {
				t.Errorf("error %v, want the write's own error", err)
			}
			if !strings.HasPrefix(c.name, "panic") && !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			got, readErr := os.ReadFile(path)
			if readErr != nil || !bytes.Equal(got, old) {
				t.Errorf("old file now %d bytes %.30q (err %v), want it untouched", len(got), got, readErr)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("directory holds %q, want only the old file", names)
			}
		})
	}
}

func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	noop := func(io.Writer) error { return nil }

	missing := filepath.Join(dir, "no", "such", "dir", "f")
	err := WriteFileAtomic(missing, noop)
	if err == nil || !strings.Contains(err.Error(), "write "+missing+": creating temporary file") {
		t.Errorf("missing directory: error %v", err)
	}
	if err := WriteFileAtomic(dir, noop); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("target is a directory: error %v", err)
	}

	fresh := filepath.Join(dir, "never")
	if err := WriteFileAtomic(fresh, func(io.Writer) error { return errors.New("no") }); err == nil {
		t.Error("a failing write reported success")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed first write left a file behind (stat err %v)", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("directory holds %q, want nothing", names)
	}
}

// TestWriteFileAtomicRelativePath covers a bare file name (directory ".").
func TestWriteFileAtomicRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := WriteFileAtomic("plain", func(w io.Writer) error {
		_, err := io.WriteString(w, "x")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile("plain"); err != nil || string(got) != "x" {
		t.Errorf("got %q, %v", got, err)
	}
}

// TestWriteFileAtomicTemporaryName pins the documented temporary name (train
// cleans up leftovers by it) and that the target is untouched until the end.
func TestWriteFileAtomicTemporaryName(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`^\.ckpt\.safetensors\.tmp-[0-9]+$`)
	err := WriteFileAtomic(path, func(w io.Writer) error {
		if _, err := io.WriteString(w, "new"); err != nil {
			return err
		}
		names := dirNames(t, dir)
		if len(names) != 2 || !pattern.MatchString(names[0]) || names[1] != "ckpt.safetensors" {
			t.Errorf("while writing, directory holds %q, want the target and one .ckpt.safetensors.tmp-<digits>", names)
		}
		if got, _ := os.ReadFile(path); string(got) != "old" {
			t.Errorf("target changed to %q before the rename", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
