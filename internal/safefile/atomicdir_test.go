package safefile

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pkg/errors"
)

// writeOne is a WriteDirAtomic write that puts one file in the directory.
func writeOne(tmp string) error {
	return WriteFileAtomic(filepath.Join(tmp, "config.json"), func(w io.Writer) error {
		_, err := io.WriteString(w, "{}\n")
		return err
	})
}

// TestWriteDirAtomic: a new directory, or an empty one, gets the files
// write made, and nothing else is left beside it; a failed write leaves no
// directory and no temporary one.
func TestWriteDirAtomic(t *testing.T) {
	root := t.TempDir()
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(root, "new"), empty} {
		if err := WriteDirAtomic(dir, writeOne); err != nil {
			t.Fatal(err)
		}
		if names := dirNames(t, dir); !slices.Equal(names, []string{"config.json"}) {
			t.Errorf("%s holds %v, want config.json", dir, names)
		}
		if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v, mode %v; want 0755", dir, err, info.Mode())
		}
	}
	failed := filepath.Join(root, "failed")
	err := WriteDirAtomic(failed, func(tmp string) error {
		if err := writeOne(tmp); err != nil {
			return err
		}
		return errors.New("disk full")
	})
	if err == nil || err.Error() != "disk full" {
		t.Errorf("a failed write: %v", err)
	}
	if names := dirNames(t, root); !slices.Equal(names, []string{"empty", "new"}) {
		t.Errorf("after a failed write %s holds %v, want only empty and new", root, names)
	}
}

// TestWriteDirAtomicRefuses: a directory that holds a file, a file, a
// symlink to an empty directory and a path whose parent is missing are
// refused on one line naming the path, before write runs.
func TestWriteDirAtomicRefuses(t *testing.T) {
	root := t.TempDir()
	full, file, link, empty := filepath.Join(root, "full"), filepath.Join(root, "file"), filepath.Join(root, "link"), filepath.Join(root, "empty")
	for _, d := range []string{full, empty} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(full, "kept.txt"), file} {
		if err := os.WriteFile(f, []byte("kept"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(empty, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{full, "it is a directory that is not empty (it holds kept.txt)"},
		{file, "it is a regular file, not a directory"},
		{link, "it is a symlink, not a directory"},
		{filepath.Join(root, "missing", "out"), "its parent " + filepath.Join(root, "missing") + " is not a directory that exists"},
	} {
		ran := false
		err := WriteDirAtomic(c.dir, func(string) error { ran = true; return nil })
		if err == nil || !strings.Contains(err.Error(), c.dir+": "+c.want) || strings.Contains(err.Error(), "\n") || ran {
			t.Errorf("%s: %v (write ran: %v), want one line %q", c.dir, err, ran, c.want)
		}
	}
	if names := dirNames(t, full); !slices.Equal(names, []string{"kept.txt"}) {
		t.Errorf("%s holds %v after the refusal", full, names)
	}
}
