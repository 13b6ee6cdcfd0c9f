package sttest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/safetensors"
)

// TestReseal: data edited after Write is refused for its digest until
// Reseal records the new one; the caller's metadata survives.
func TestReseal(t *testing.T) {
	var buf bytes.Buffer
	tensors := []safetensors.Tensor{{Name: "a", DType: "U8", Shape: []int{3}, Data: []byte{1, 2, 3}}}
	if err := safetensors.Write(&buf, tensors, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	edited := append([]byte{}, buf.Bytes()...)
	edited[len(edited)-1] = 9
	if _, _, err := safetensors.Read(edited); err == nil || !strings.Contains(err.Error(), "does not match its data_sha256") {
		t.Fatalf("edited data without Reseal: error %v, want the digest mismatch", err)
	}
	got, meta, err := safetensors.Read(Reseal(t, edited))
	if err != nil || !bytes.Equal(got[0].Data, []byte{1, 2, 9}) || len(meta) != 1 || meta["k"] != "v" {
		t.Errorf("resealed: %+v %v, %v; want data [1 2 9] and metadata k=v", got, meta, err)
	}
}
