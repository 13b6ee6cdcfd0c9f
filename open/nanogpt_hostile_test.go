package open

import (
	"archive/zip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// frameBomb is a protocol 4 pickle whose FRAME claims 2^36 bytes.
var frameBomb = append(binary.LittleEndian.AppendUint64([]byte("\x80\x04\x95"), 1<<36), "N."...)

// nanoGPTOutDir is a directory holding a copy of the nanoGPT fixture's
// ckpt.pt, as train.py's out_dir.
func nanoGPTOutDir(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("nanogpt", "testdata", "bias", NanoGPTFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, NanoGPTFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHostileNanoGPTFiles: what the commands open and fine-tune from
// (Open, ForFineTuning) refuses in one line naming the file: a ckpt.pt whose
// data.pkl's FRAME claims 2^36 bytes, such a meta.pkl beside a good
// checkpoint, and a meta.pkl beside one that is a link to another file.
func TestHostileNanoGPTFiles(t *testing.T) {
	bomb := filepath.Join(t.TempDir(), NanoGPTFile)
	f, err := os.Create(bomb)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "ckpt/data.pkl", Method: zip.Store})
	if err == nil {
		_, err = w.Write(frameBomb)
	}
	if err != nil || zw.Close() != nil || f.Close() != nil {
		t.Fatal(err)
	}
	metaBomb := nanoGPTOutDir(t)
	if err := os.WriteFile(filepath.Join(metaBomb, "meta.pkl"), frameBomb, 0o644); err != nil {
		t.Fatal(err)
	}
	linked := nanoGPTOutDir(t)
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(passwd, filepath.Join(linked, "meta.pkl")); err != nil {
		t.Fatal(err)
	}
	claims := "FRAME at byte 2 claims 68719476736 bytes, the pickle has 2 more"
	for _, c := range []struct{ path, want string }{
		{bomb, bomb + ": ckpt/data.pkl: " + claims},
		{metaBomb, filepath.Join(metaBomb, "meta.pkl") + " (the vocabulary of " + filepath.Join(metaBomb, NanoGPTFile) + "): " + claims},
		{linked, filepath.Join(linked, "meta.pkl") + " (the vocabulary of " + filepath.Join(linked, NanoGPTFile) + "): is a symbolic link"},
	} {
		_, err := Open(c.path, Options{})
		_, _, ftErr := ForFineTuning(c.path, Options{})
		for _, err := range []error{err, ftErr} {
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %v; want one line starting %q", c.path, err, c.want)
			}
		}
	}
}
