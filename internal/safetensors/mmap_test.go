package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMapServesTheFilesBytes: a mapped tensor's bytes are the ones the
// file holds for it, and its Info the header's; widened, a BF16 tensor
// gives what Float32 reads.
func TestMapServesTheFilesBytes(t *testing.T) {
	bf16 := []byte{0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40} // 1, -2, 3.140625
	f32 := EncodeFloat32([]float32{0.5, -7})
	path := filepath.Join(t.TempDir(), "m.safetensors")
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "a", DType: BF16, Shape: []int{3}, Data: bf16}, {Name: "b", DType: F32, Shape: []int{2}, Data: f32}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, MaxFileLen)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := f.Map()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, want := range map[string][]byte{"a": bf16, "b": f32} {
		got, in, err := m.Bytes(name)
		if err != nil || !bytes.Equal(got, want) || in.Name != name {
			t.Errorf("Bytes(%q) = %v, %+v, %v; want %v", name, got, in, err, want)
		}
	}
	raw, _, _ := m.Bytes("a")
	widened := make([]float32, 3)
	Widen(widened, raw, BF16)
	read, err := f.Float32("a")
	if err != nil || !equalBits(widened, read) {
		t.Errorf("widened %v, Float32 read %v (%v)", widened, read, err)
	}
	if _, _, err := m.Bytes("c"); err == nil {
		t.Error("Bytes of a missing tensor: no error")
	}
}

func equalBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMapRefusesASource: a File read from an open Source (a hashing
// reader) has no file to map, and says so.
func TestMapRefusesASource(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "a", DType: F32, Shape: []int{1}, Data: EncodeFloat32([]float32{1})}}, nil); err != nil {
		t.Fatal(err)
	}
	f, err := OpenSource(nopCloser{bytes.NewReader(buf.Bytes())}, int64(buf.Len()), MaxFileLen, Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Map(); err == nil || !strings.Contains(err.Error(), "cannot be mapped") {
		t.Fatalf("Map of a Source: %v", err)
	}
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
