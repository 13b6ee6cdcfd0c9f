package safefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHashedFileDigestOfBytesServed: the digest is of the bytes the reader
// consumed, whether it read in order (one pass) or out of order (checked in
// a second pass), when the path is renamed over mid-read; a file rewritten
// in place under an out-of-order reader is refused, naming it.
func TestHashedFileDigestOfBytesServed(t *testing.T) {
	loaded := bytes.Repeat([]byte("the weights trained from. "), 100_000) // larger than verify's chunk
	other := bytes.Repeat([]byte("other weights, same size! "), 100_000)
	want := sha256.Sum256(loaded)
	for _, c := range []struct {
		name string
		read func(f *HashedFile, swap func()) []byte
	}{
		{"in order, whole", func(f *HashedFile, swap func()) []byte {
			head := make([]byte, 1000)
			io.ReadFull(f, head)
			swap()
			rest, _ := io.ReadAll(f)
			return append(head, rest...)
		}},
		{"in order, the head only", func(f *HashedFile, swap func()) []byte {
			head := make([]byte, 1000)
			f.ReadAt(head, 0)
			swap()
			return head
		}},
		{"out of order", func(f *HashedFile, swap func()) []byte {
			tail, head := make([]byte, 5000), make([]byte, 7000)
			f.ReadAt(tail, f.Size()-5000)
			swap()
			f.ReadAt(head, 0)
			return head
		}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "model.safetensors")
		if err := os.WriteFile(path, loaded, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := OpenHashed(path)
		if err != nil {
			t.Fatal(err)
		}
		got := c.read(f, func() {
			// What the races did: other weights renamed over the path mid-load.
			replacement := filepath.Join(dir, "other")
			if err := os.WriteFile(replacement, other, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(replacement, path); err != nil {
				t.Fatal(err)
			}
		})
		if !bytes.HasPrefix(loaded, got) {
			t.Fatalf("%s: the reads served other bytes", c.name)
		}
		d, err := f.Sum()
		f.Close()
		if err != nil || d.SHA256 != hex.EncodeToString(want[:]) || d.Size != int64(len(loaded)) {
			t.Errorf("%s: digest %+v, %v; want the %d bytes loaded, %x", c.name, d, err, len(loaded), want)
		}
	}
	path := filepath.Join(t.TempDir(), "ckpt.pt")
	if err := os.WriteFile(path, loaded, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := OpenHashed(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.ReadAt(make([]byte, 100), 5000)
	if err := os.WriteFile(path, other, 0o644); err != nil { // in place: the same inode
		t.Fatal(err)
	}
	f.ReadAt(make([]byte, 100), 0)
	if _, err := f.Sum(); err == nil || !strings.Contains(err.Error(), path+" changed while it was read") {
		t.Errorf("rewritten in place: %v, want it refused", err)
	}
}
