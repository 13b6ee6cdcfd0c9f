package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// onDisk writes data to a new file in a test directory and returns its path.
func onDisk(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// flipBit returns a copy of file with one bit of its data section flipped,
// and the mismatch message a reader must give for it.
func flipBit(t *testing.T, file []byte, dataByte int, bit uint) ([]byte, string) {
	t.Helper()
	start := 8 + int(binary.LittleEndian.Uint64(file))
	bad := append([]byte{}, file...)
	bad[start+dataByte] ^= 1 << bit
	recorded := sha256.Sum256(file[start:])
	found := sha256.Sum256(bad[start:])
	want := "tensor data does not match its data_sha256 (recorded " + hex.EncodeToString(recorded[:4]) +
		"..., found " + hex.EncodeToString(found[:4]) + "...): the file is corrupt or was edited"
	return bad, want
}

// wholeFileReaders are the old API's readers, each reading a file's bytes
// through a different path.
var wholeFileReaders = []struct {
	name string
	read func(t *testing.T, data []byte) ([]Tensor, map[string]string, error)
}{
	{"Read", func(_ *testing.T, data []byte) ([]Tensor, map[string]string, error) { return Read(data) }},
	{"ReadFileLimit", func(t *testing.T, data []byte) ([]Tensor, map[string]string, error) {
		return ReadFileLimit(onDisk(t, data), MaxFileLen)
	}},
	{"ReadFileChecked", func(t *testing.T, data []byte) ([]Tensor, map[string]string, error) {
		return ReadFileChecked(onDisk(t, data), MaxFileLen, func([]Tensor, map[string]string) error { return nil })
	}},
	{"stream", func(_ *testing.T, data []byte) ([]Tensor, map[string]string, error) {
		return readFrom(bytes.NewReader(data), -1, MaxFileLen, nil)
	}},
}

// TestOldAPICatchesFlippedBit: a bit flipped anywhere in the tensor data of
// a file Write made is refused by every whole-file reader with the digest
// message; the unflipped file reads back with the caller's metadata alone.
func TestOldAPICatchesFlippedBit(t *testing.T) {
	good := smallFile(t)
	dataLen := len(good) - 8 - int(binary.LittleEndian.Uint64(good))
	for _, r := range wholeFileReaders {
		t.Run(r.name, func(t *testing.T) {
			_, meta, err := r.read(t, good)
			if err != nil || !reflect.DeepEqual(meta, map[string]string{"k": "v"}) {
				t.Fatalf("good file: metadata %v, error %v; want only the caller's metadata", meta, err)
			}
			for _, at := range []int{0, dataLen / 2, dataLen - 1} {
				bad, want := flipBit(t, good, at, uint(at%8))
				if _, _, err := r.read(t, bad); err == nil || err.Error() != want {
					t.Errorf("bit flipped in data byte %d: error %v\nwant %s", at, err, want)
				}
			}
		})
	}
}

// TestOldAPIWithoutDigest: a file that records no digest (written before
// digests, or elsewhere) still reads.
func TestOldAPIWithoutDigest(t *testing.T) {
	plain := file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, []byte{7, 9})
	for _, r := range wholeFileReaders {
		tensors, meta, err := r.read(t, plain)
		if err != nil || len(tensors) != 1 || !bytes.Equal(tensors[0].Data, []byte{7, 9}) || len(meta) != 0 {
			t.Errorf("%s: %+v %v, %v", r.name, tensors, meta, err)
		}
	}
}

// TestDigestMalformed: a recorded digest that cannot be a SHA-256 is refused
// from the header, naming the key.
func TestDigestMalformed(t *testing.T) {
	for _, digest := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("0", 65), strings.Repeat("g", 64)} {
		_, _, err := Read(file(`{"__metadata__":{"data_sha256":"`+digest+`"}}`, nil))
		if err == nil || !strings.HasPrefix(err.Error(), `__metadata__ "data_sha256": `) || !strings.Contains(err.Error(), "is not a SHA-256 (64 hex digits 0-9a-f)") {
			t.Errorf("digest %q: error %v", digest, err)
		}
	}
}
