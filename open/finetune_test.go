package open

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// swapOnNotice renames replacement over target when the reader names
// target as the file it is reading: a swap in the middle of the load,
// after the file is opened and before its tensors are read.
type swapOnNotice struct {
	t                   *testing.T
	target, replacement string
	swapped             bool
}

func (w *swapOnNotice) Write(p []byte) (int, error) {
	if !w.swapped && strings.HasPrefix(string(p), "reading "+w.target+" ") {
		if err := os.Rename(w.replacement, w.target); err != nil {
			w.t.Fatal(err)
		}
		w.swapped = true
	}
	return len(p), nil
}

// TestFineTuningRecordsBytesLoaded (issue 42, case 6a): other weights
// renamed over model.safetensors while init_from loads it do not pass for
// the weights trained from: the recorded SHA-256 and size are those of the
// bytes loaded, hashed as they were read.
func TestFineTuningRecordsBytesLoaded(t *testing.T) {
	dir := gpt2Vocab(t)
	weights := filepath.Join(dir, "model.safetensors")
	loaded, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Clone(loaded)
	other[len(other)-1] ^= 0x01 // the last weight's lowest bit: other weights, same size
	replacement := filepath.Join(t.TempDir(), "other.safetensors")
	if err := os.WriteFile(replacement, other, 0o644); err != nil {
		t.Fatal(err)
	}
	notices := &swapOnNotice{t: t, target: weights, replacement: replacement}
	_, rec, err := ForFineTuning(dir, Options{Notices: notices})
	if err != nil {
		t.Fatal(err)
	}
	if !notices.swapped {
		t.Fatal("the reader never named the weights it read; the test swapped nothing")
	}
	want := sha256.Sum256(loaded)
	found := false
	for _, f := range rec.Files {
		if filepath.Base(f.Path) == "model.safetensors" {
			found = true
			if f.SHA256 != hex.EncodeToString(want[:]) || f.Size != int64(len(loaded)) {
				t.Errorf("recorded %d bytes, sha256 %s; the weights loaded are %d bytes, %x", f.Size, f.SHA256, len(loaded), want)
			}
			continue
		}
		checkRecorded(t, f.Path, f.Size, f.SHA256) // config.json, left as it was
	}
	if !found {
		t.Errorf("the record lists no model.safetensors: %+v", rec.Files)
	}
}

// TestFineTuningRecordsNanoGPT: a nanoGPT checkpoint, whose zip is read out
// of order, and its meta.pkl are recorded with the digests of their bytes.
func TestFineTuningRecordsNanoGPT(t *testing.T) {
	dir := t.TempDir()
	for src, name := range map[string]string{"nanogpt/testdata/bias/ckpt.pt": "ckpt.pt", "nanogpt/testdata/meta.pkl": "meta.pkl"} {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, rec, err := ForFineTuning(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Files) != 2 {
		t.Fatalf("recorded %+v, want ckpt.pt and meta.pkl", rec.Files)
	}
	for _, f := range rec.Files {
		checkRecorded(t, f.Path, f.Size, f.SHA256)
	}
}

// checkRecorded fails the test when the file at path is not of the size
// and SHA-256 recorded.
func checkRecorded(t *testing.T, path string, size int64, digest string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); digest != hex.EncodeToString(sum[:]) || size != int64(len(raw)) {
		t.Errorf("%s: recorded %d bytes, sha256 %s; the file is %d bytes, %x", path, size, digest, len(raw), sum)
	}
}
