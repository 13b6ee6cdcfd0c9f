package sttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/attnscope/attnscope/internal/safetensors"
)

// Split returns a file's header as generic JSON and its data section.
func Split(t testing.TB, file []byte) (header map[string]any, data []byte) {
	t.Helper()
	n := binary.LittleEndian.Uint64(file)
	if err := json.Unmarshal(file[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	return header, file[8+n:]
}

// Join writes header (padded with spaces to a multiple of 8 bytes) and data
// back into one file.
func Join(t testing.TB, header any, data []byte) []byte {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// EditHeader applies edit to a copy of file's header.
func EditHeader(t testing.TB, file []byte, edit func(header map[string]any)) []byte {
	t.Helper()
	h, data := Split(t, file)
	edit(h)
	return Join(t, h, data)
}

// EditConfig applies edit to the run config a checkpoint carries in its
// metadata (key "config", a JSON object) and writes it back.
func EditConfig(t testing.TB, file []byte, edit func(run map[string]any)) []byte {
	t.Helper()
	return EditHeader(t, file, func(h map[string]any) {
		meta := h["__metadata__"].(map[string]any)
		var run map[string]any
		if err := json.Unmarshal([]byte(meta["config"].(string)), &run); err != nil {
			t.Fatal(err)
		}
		edit(run)
		b, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		meta["config"] = string(b)
	})
}

// Reseal records in file's metadata the SHA-256 of its data section as it
// now is (safetensors.DigestKey), as safetensors.Write would have: a test
// that forges data a buggy writer could produce (a NaN weight) then reaches
// the check it is about instead of the digest's.
func Reseal(t testing.TB, file []byte) []byte {
	t.Helper()
	h, data := Split(t, file)
	meta, _ := h["__metadata__"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		h["__metadata__"] = meta
	}
	sum := sha256.Sum256(data)
	meta[safetensors.DigestKey] = hex.EncodeToString(sum[:])
	return Join(t, h, data)
}

// SetElement overwrites element i of the named tensor with bits, one
// element's bytes (safetensors.EncodeFloat32 of one value for an F32
// tensor), and reseals the file as a writer that saved that value would
// have.
func SetElement(t testing.TB, file []byte, name string, i int, bits []byte) []byte {
	t.Helper()
	h, data := Split(t, file)
	begin, _ := Offsets(h, name)
	out := bytes.Clone(file)
	copy(out[len(file)-len(data)+int(begin)+i*len(bits):], bits)
	return Reseal(t, out)
}

// ShiftOffsets moves the named tensor's data_offsets by delta bytes in the
// header, leaving the data as it is: the tensor then overlaps its
// neighbour, or runs past the data section.
func ShiftOffsets(t testing.TB, file []byte, name string, delta float64) []byte {
	t.Helper()
	return EditHeader(t, file, func(h map[string]any) {
		begin, end := Offsets(h, name)
		Entry(h, name)["data_offsets"] = []float64{begin + delta, end + delta}
	})
}

// Entry is the header record of the named tensor.
func Entry(header map[string]any, name string) map[string]any {
	return header[name].(map[string]any)
}

// Offsets reads the named tensor's data_offsets.
func Offsets(header map[string]any, name string) (begin, end float64) {
	o := Entry(header, name)["data_offsets"].([]any)
	return o[0].(float64), o[1].(float64)
}
