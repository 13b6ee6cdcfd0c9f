package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadLimitOwn: a regular file is read as ReadLimit reads it; a link
// at the path, to a regular file or dangling, is refused naming the path,
// without its target being read.
func TestReadLimitOwn(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	if raw, err := ReadLimitOwn(file, 100, "a file may take"); err != nil || string(raw) != "contents" {
		t.Errorf("a regular file: %q, %v", raw, err)
	}
	if _, err := ReadLimitOwn(file, 4, "a file may take"); err == nil || !strings.Contains(err.Error(), "more than the 4 bytes a file may take") {
		t.Errorf("a file over the limit: %v", err)
	}
	for _, target := range []string{file, filepath.Join(dir, "gone")} {
		link := filepath.Join(dir, "link")
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		raw, err := ReadLimitOwn(link, 100, "a file may take")
		if want := link + " is a symbolic link; refusing to read through it (put the file itself in its place)"; err == nil || err.Error() != want || !errors.Is(err, ErrLink) || raw != nil {
			t.Errorf("a link to %s: %q, %v; want %q wrapping ErrLink", target, raw, err, want)
		}
	}
}
