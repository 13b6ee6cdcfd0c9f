package safetensors

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// memFile is a file in memory that can patch what it wrote.
type memFile struct{ data []byte }

func (f *memFile) Write(p []byte) (int, error) {
	f.data = append(f.data, p...)
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	return copy(f.data[off:], p), nil
}

// TestWriteSealedIsWrite: WriteSealed's one pass writes the bytes Write
// writes (the digest patched in place), for tensors spanning several chunks
// and metadata whose keys sort around the digest's and whose value spells
// the placeholder entry.
func TestWriteSealedIsWrite(t *testing.T) {
	big := make([]float32, streamChunk/4*2+3) // two chunks and a bit
	for i := range big {
		big[i] = float32(i) * 0.5
	}
	small := []float64{1, -2, math.Pi}
	meta := map[string]string{"a": `"data_sha256":"` + strings.Repeat("0", 64) + `"`, "z": "last"}
	var want bytes.Buffer
	if err := Write(&want, []Tensor{
		{Name: "big", DType: F32, Shape: []int{len(big)}, Data: EncodeFloat32(big)},
		{Name: "small", DType: F64, Shape: []int{3}, Data: EncodeFloat64(small)},
	}, meta); err != nil {
		t.Fatal(err)
	}
	var got memFile
	if err := WriteSealed(&got, []Stream{
		{Name: "big", DType: F32, Shape: []int{len(big)}, Encode: Float32Encoder(big, nil)},
		{Name: "small", DType: F64, Shape: []int{3}, Encode: Float64Encoder(small, nil)},
	}, meta); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.data, want.Bytes()) {
		t.Fatalf("WriteSealed wrote %d bytes that differ from Write's %d", len(got.data), want.Len())
	}
	if _, _, err := Read(got.data); err != nil {
		t.Errorf("the sealed file does not read back: %v", err)
	}
}

// TestWriteSealedStopsAtRefusedChunk: an encoder's refusal is returned as it
// is, and the tensors after it are not written.
func TestWriteSealedStopsAtRefusedChunk(t *testing.T) {
	refused := errors.New("tensor \"x\": value NaN at index [1] is not finite")
	var f memFile
	err := WriteSealed(&f, []Stream{
		{Name: "x", DType: F32, Shape: []int{2}, Encode: func([]byte, int) error { return refused }},
		{Name: "y", DType: F32, Shape: []int{1}, Encode: func([]byte, int) error { t.Error("encoded y after x was refused"); return nil }},
	}, nil)
	if !errors.Is(err, refused) {
		t.Errorf("error %v, want the encoder's", err)
	}
	if err := WriteSealed(&f, nil, map[string]string{DigestKey: "x"}); err == nil {
		t.Error("metadata setting the digest key was accepted")
	}
}

// fullFile fails every write past its first n bytes, as a full disk does.
type fullFile struct {
	memFile
	n int
}

func (f *fullFile) Write(p []byte) (int, error) {
	if len(f.data)+len(p) > f.n {
		return 0, errors.New("no space left on device")
	}
	return f.memFile.Write(p)
}

// TestWriteSealedStopsAtFailedWrite: a write that fails mid-data (on the
// writer's goroutine) is the error, and encoding stops soon after it.
func TestWriteSealedStopsAtFailedWrite(t *testing.T) {
	big := make([]float32, 4*streamChunk) // sixteen chunks
	encoded := 0
	encode := Float32Encoder(big, func([]float32, int) error { encoded++; return nil })
	f := &fullFile{n: streamChunk}
	err := WriteSealed(f, []Stream{{Name: "big", DType: F32, Shape: []int{len(big)}, Encode: encode}}, nil)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("error %v, want the write's", err)
	}
	if encoded > 2+chunkBuffers {
		t.Errorf("encoded %d chunks after the first write failed", encoded)
	}
}
