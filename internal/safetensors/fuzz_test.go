package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

var updateCorpus = flag.Bool("update-safetensors-corpus", false, "rewrite testdata/fuzz/FuzzRead seed files")

// corpusSeeds are the committed FuzzRead seeds: valid files of several
// shapes, and broken ones near each check.
func corpusSeeds() map[string][]byte {
	valid := func(tensors []Tensor, metadata map[string]string) []byte {
		var buf bytes.Buffer
		if err := Write(&buf, tensors, metadata); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}
	two := valid([]Tensor{
		{Name: "w", DType: F32, Shape: []int{2, 3}, Data: EncodeFloat32([]float32{1, 2, 3, 4, 5, 6})},
		{Name: "b", DType: F64, Shape: []int{3}, Data: EncodeFloat64([]float64{-1, 0, 1})},
	}, map[string]string{"format": "x/1", "config": `{"a":1}`})
	headerLen := binary.LittleEndian.Uint64(two)
	flipped := append([]byte{}, two...)
	flipped[len(flipped)-1] ^= 1
	return map[string][]byte{
		"valid-two-tensors":  two,
		"valid-empty":        valid(nil, nil),
		"valid-scalar-zero":  valid([]Tensor{{Name: "s", DType: "BF16", Shape: []int{}, Data: []byte{1, 2}}, {Name: "z", DType: "I64", Shape: []int{0, 5}}}, nil),
		"truncated-length":   two[:5],
		"truncated-header":   two[:8+headerLen/2],
		"truncated-data":     two[:len(two)-3],
		"trailing-byte":      append(append([]byte{}, two...), 0),
		"overlap":            file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, []byte{1, 2, 3}),
		"gap":                file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, []byte{1, 2, 3}),
		"duplicate":          file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2}),
		"huge-shape":         file(`{"a":{"dtype":"F64","shape":[9223372036854775807,2],"data_offsets":[0,16]}}`, make([]byte, 16)),
		"metadata-number":    file(`{"__metadata__":{"step":1}}`, nil),
		"header-length-huge": []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '{', '}'},
		"digest-mismatch":    flipped,
		"digest-malformed":   file(`{"__metadata__":{"data_sha256":"0123"}}`, nil),
		"valid-no-digest":    file(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, []byte{0, 0x3c, 0, 0xc0}),
		// Issue 42's header of zero-size tensors, in small.
		"many-zero-size": manyTensors(64),
		"escaped-fields": file(`{"a":{"d\u0074ype":"F32","shape":[1e0],"data_offsets":[0,4]}}`, make([]byte, 4)),
	}
}

// TestFuzzReadCorpus keeps the committed seed files in step with
// corpusSeeds; run with -update-safetensors-corpus to rewrite them.
func TestFuzzReadCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	for name, data := range corpusSeeds() {
		content := []byte(fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data))
		path := filepath.Join(dir, name)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("seed %s is missing or stale (err %v); rerun with -update-safetensors-corpus", path, err)
		}
	}
}

// FuzzRead checks that no input panics Read, that reading the same bytes
// from a stream of unknown length (a pipe) accepts exactly the same files,
// and that whatever Read accepts accounts for every byte of the file and
// survives a Write/Read round trip.
func FuzzRead(f *testing.F) {
	for _, data := range corpusSeeds() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tensors, metadata, err := Read(data)
		streamed, streamedMeta, streamErr := readFrom(bytes.NewReader(data), -1, MaxFileLen, nil)
		if (err == nil) != (streamErr == nil) || !reflect.DeepEqual(streamed, tensors) || !reflect.DeepEqual(streamedMeta, metadata) {
			t.Fatalf("Read: %v; from a stream: %v", err, streamErr)
		}
		if err != nil {
			return
		}
		covered := 8 + int(binary.LittleEndian.Uint64(data))
		for _, tn := range tensors {
			size, err := DTypeSize(tn.DType)
			if err != nil {
				t.Fatalf("accepted tensor %q: %v", tn.Name, err)
			}
			n := size
			for _, d := range tn.Shape {
				n *= d
			}
			if n != len(tn.Data) {
				t.Fatalf("accepted tensor %q: %d bytes for shape %v of %s", tn.Name, len(tn.Data), tn.Shape, tn.DType)
			}
			covered += n
		}
		if covered != len(data) {
			t.Fatalf("accepted a %d-byte file whose header and tensors cover %d", len(data), covered)
		}
		var buf bytes.Buffer
		if err := Write(&buf, tensors, metadata); err != nil {
			t.Fatalf("Write refused what Read accepted: %v", err)
		}
		again, againMeta, err := Read(buf.Bytes())
		if err != nil {
			t.Fatalf("Read refused what Write wrote: %v", err)
		}
		if !reflect.DeepEqual(again, tensors) || !reflect.DeepEqual(againMeta, metadata) {
			t.Fatalf("round trip changed the file: %+v %v -> %+v %v", tensors, metadata, again, againMeta)
		}
	})
}

// FuzzOpen checks that no input panics Open or a File's reads; that Open
// refuses exactly what Read refuses from the header, with the same message,
// and Verify what Read refuses for the digest; and that every value slice
// is sized by a tensor whose bytes the file holds, equal to decoding those
// bytes whole.
func FuzzOpen(f *testing.F) {
	for _, data := range corpusSeeds() {
		f.Add(data)
	}
	path := filepath.Join(f.TempDir(), "input.safetensors")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tensors, _, readErr := Read(data)
		file, err := Open(path, MaxFileLen)
		if err != nil {
			if fmt.Sprint(err) != fmt.Sprint(readErr) {
				t.Fatalf("Open: %v; Read: %v", err, readErr)
			}
			return
		}
		defer file.Close()
		checkBounded(t, path, file)
		if _, err := file.Verify(); fmt.Sprint(err) != fmt.Sprint(readErr) {
			t.Fatalf("Verify: %v; Read: %v", err, readErr)
		}
		for i, in := range file.Tensors() {
			values, err := file.Float32(in.Name)
			if checkFloat[float32](in) != nil {
				if err == nil {
					t.Fatalf("tensor %q of dtype %s read as float32", in.Name, in.DType)
				}
				continue
			}
			if err != nil {
				t.Fatalf("tensor %q: %v", in.Name, err)
			}
			if int64(len(values)*dtypeSizes[in.DType]) != in.End-in.Begin || in.End > int64(len(data)) {
				t.Fatalf("tensor %q: %d values for bytes [%d, %d) of a %d-byte file", in.Name, len(values), in.Begin, in.End, len(data))
			}
			if readErr == nil {
				whole := make([]float32, len(values))
				decodeFloats(whole, tensors[i].Data, in.DType)
				if !bytes.Equal(EncodeFloat32(whole), EncodeFloat32(values)) {
					t.Fatalf("tensor %q: Float32 %v, decoded whole %v", in.Name, values, whole)
				}
			}
		}
	})
}

// checkBounded: OpenBounded with small bounds refuses the file Open opened
// exactly when it holds more tensors, or more of no elements, than they
// allow, and otherwise reads the same tensors.
func checkBounded(t *testing.T, path string, file *File) {
	bounds := Bounds{Tensors: 4, ZeroSize: 1}
	tensors, zeroSize := file.Tensors(), 0
	for _, in := range tensors {
		if in.Len() == 0 {
			zeroSize++
		}
	}
	bounded, err := OpenBounded(path, MaxFileLen, bounds)
	var tooMany *TooManyTensorsError
	switch over := len(tensors) > bounds.Tensors || zeroSize > bounds.ZeroSize; {
	case over && !errors.As(err, &tooMany):
		t.Fatalf("%d tensors, %d of no elements, within %+v: error %v", len(tensors), zeroSize, bounds, err)
	case !over && err != nil:
		t.Fatalf("%d tensors, %d of no elements, within %+v: error %v", len(tensors), zeroSize, bounds, err)
	case !over:
		defer bounded.Close()
		if !reflect.DeepEqual(bounded.Tensors(), tensors) {
			t.Fatalf("bounded %v, unbounded %v", bounded.Tensors(), tensors)
		}
	}
}
