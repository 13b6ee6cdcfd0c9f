package safefile

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func writeString(s string) func(Writer) error {
	return func(w Writer) error {
		_, err := io.WriteString(w, s)
		return err
	}
}

// TestStagedLinkAs: a staged file given a second name replaces what was
// there, shares the one inode, and keeps its bytes when the first name is
// later replaced; nothing is in place before Commit.
func TestStagedLinkAs(t *testing.T) {
	dir := t.TempDir()
	ckpt, best := filepath.Join(dir, "checkpoint"), filepath.Join(dir, "best")
	for path, content := range map[string]string{ckpt: "old checkpoint", best: "old best"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	staged, err := Stage(ckpt, writeString("new"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(ckpt); string(got) != "old checkpoint" {
		t.Errorf("staging changed the file in place: %q", got)
	}
	if err := staged.LinkAs(best); err != nil {
		t.Fatal(err)
	}
	if err := staged.Commit(); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(ckpt)
	b, _ := os.Stat(best)
	if !os.SameFile(a, b) || a.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint and best are two files (or the mode %v was not kept)", a.Mode().Perm())
	}
	if err := WriteFileAtomic(ckpt, func(w io.Writer) error { _, err := io.WriteString(w, "next"); return err }); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(best); string(got) != "new" {
		t.Errorf("replacing the checkpoint changed best to %q", got)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"best", "checkpoint"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestStagedDiscard: a discarded stage leaves the file and the directory as
// they were.
func TestStagedDiscard(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	staged, err := Stage(path, writeString("dropped"))
	if err != nil {
		t.Fatal(err)
	}
	staged.Discard()
	if got, _ := os.ReadFile(path); string(got) != "kept" {
		t.Errorf("file holds %q", got)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"f"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestWriteFileAtomicAtPatches: WriteAt patches bytes still in the buffer's
// past, and the file holds the patched bytes.
func TestWriteFileAtomicAtPatches(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteFileAtomicAt(path, func(w Writer) error {
		if _, err := io.WriteString(w, "header=????;data"); err != nil {
			return err
		}
		_, err := w.WriteAt([]byte("abcd"), 7)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "header=abcd;data" {
		t.Errorf("file holds %q", got)
	}
}
