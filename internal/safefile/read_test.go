package safefile

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestKind names every file type, a character device (which has the device
// bit too) as such, and any other type by its mode.
func TestKind(t *testing.T) {
	for mode, want := range map[fs.FileMode]string{
		0o644:                             "a regular file",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a device",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeSymlink:                    "a symlink",
		fs.ModeSocket:                     "a socket",
		fs.ModeIrregular:                  "not a regular file (?---------)",
	} {
		if got := Kind(mode); got != want {
			t.Errorf("Kind(%v) = %q, want %q", mode, got, want)
		}
	}
}

// TestOpenLimit: a file over the limit is refused before it is read, as
// ReadLimit refuses it; one that grows past the limit after it was opened
// fails the read that passes the limit, with the same words.
func TestOpenLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLimit(path, 4, "a test file may hold"); err == nil || err.Error() != path+" is 5 bytes, more than the 4 bytes a test file may hold" {
		t.Errorf("over the limit: error %v", err)
	}
	r, err := OpenLimit(path, 8, "a test file may hold")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("6789"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := io.ReadAll(r)
	if err == nil || err.Error() != path+" is 9 bytes, more than the 8 bytes a test file may hold" || len(got) > 8 {
		t.Errorf("grown past the limit: read %q, error %v", got, err)
	}
}
