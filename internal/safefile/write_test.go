package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenForWriteRefusesLinks: a link planted where a run writes, to a
// file or dangling, is refused naming it; the target keeps its bytes and a
// dangling link's target is not created. A regular file opens.
func TestOpenForWriteRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, target string }{{"to a file", precious}, {"dangling", filepath.Join(dir, "created.txt")}} {
		link := filepath.Join(dir, "link-"+strings.ReplaceAll(c.name, " ", "-"))
		if err := os.Symlink(c.target, link); err != nil {
			t.Fatal(err)
		}
		f, err := OpenForWrite(link, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err == nil {
			f.Close()
			t.Fatalf("%s: opened", c.name)
		}
		if !errors.Is(err, ErrLink) || !strings.Contains(err.Error(), link+" is a symbolic link") {
			t.Errorf("%s: error %v", c.name, err)
		}
	}
	if got, _ := os.ReadFile(precious); string(got) != "keep me" {
		t.Errorf("the link's target now holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "created.txt")); !os.IsNotExist(err) {
		t.Errorf("the dangling link's target was created (%v)", err)
	}
	f, err := OpenForWrite(filepath.Join(dir, "plain"), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
