package safetensors

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestWriteStreamedReadsBack: a file written a tensor at a time is Write's
// file without the digest, StreamedHeader is its every byte before the
// data, and a fill of the wrong size is refused naming the tensor.
func TestWriteStreamedReadsBack(t *testing.T) {
	tensors := []Tensor{
		{Name: "a", DType: BF16, Shape: []int{3, 5}, Data: bytes.Repeat([]byte{1, 2}, 15)},
		{Name: "b", DType: F32, Shape: []int{2}, Data: []byte{0, 0, 128, 63, 0, 0, 0, 64}},
	}
	meta := map[string]string{"format": "pt"}
	var buf bytes.Buffer
	fill := func(tt Tensor, w io.Writer) error {
		for _, want := range tensors {
			if want.Name == tt.Name {
				_, err := w.Write(want.Data)
				return err
			}
		}
		return nil
	}
	if err := WriteStreamed(&buf, tensors, meta, fill); err != nil {
		t.Fatal(err)
	}
	got, gotMeta, err := Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].Data, tensors[0].Data) || !bytes.Equal(got[1].Data, tensors[1].Data) || len(gotMeta) != 1 || gotMeta["format"] != "pt" {
		t.Errorf("read back %+v, metadata %v", got, gotMeta)
	}
	header, err := StreamedHeader(tensors, meta)
	if err != nil || !bytes.HasPrefix(buf.Bytes(), header) || buf.Len() != len(header)+30+8 {
		t.Errorf("StreamedHeader %q (%v) is not the file's %d bytes before its data", header, err, buf.Len()-38)
	}
	short := func(tt Tensor, w io.Writer) error { _, err := w.Write([]byte{1}); return err }
	if err := WriteStreamed(io.Discard, tensors, meta, short); err == nil || !strings.Contains(err.Error(), `tensor "a": shape [3 5] of BF16 needs 30 bytes, 1 were written`) {
		t.Errorf("a short fill: %v", err)
	}
}
