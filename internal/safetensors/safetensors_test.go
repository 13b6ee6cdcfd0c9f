package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// file assembles a safetensors file from a header exactly as given (no
// padding) and a data section, the way a foreign writer might.
func file(header string, data []byte) []byte {
	out := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

// TestWriteExactBytes pins the layout against bytes written out by hand:
// length prefix, header text and order (the digest among the metadata keys),
// space padding to a multiple of 8, little-endian data in the order given.
func TestWriteExactBytes(t *testing.T) {
	tensors := []Tensor{
		{Name: "b", DType: F32, Shape: []int{2}, Data: EncodeFloat32([]float32{1, -2})},
		{Name: "a", DType: F64, Shape: []int{}, Data: EncodeFloat64([]float64{0.5})},
	}
	var buf bytes.Buffer
	if err := Write(&buf, tensors, map[string]string{"z": "1", "k": "<v>"}); err != nil {
		t.Fatal(err)
	}
	// The digest of the 16 data bytes below, from coreutils:
	// printf '\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\xe0\x3f' | sha256sum
	header := `{"__metadata__":{"data_sha256":"2b6b2a5e7f8dc10c4a51ead62e7c27f6cf3311a55e2a393c3383d73c0a473624","k":"<v>","z":"1"},` +
		`"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},` +
		`"a":{"dtype":"F64","shape":[],"data_offsets":[8,16]}}`
	// 223 bytes of JSON, padded with 1 space to 224 = 28*8.
	if len(header) != 223 {
		t.Fatalf("test header is %d bytes, the padding below assumes 223", len(header))
	}
	want := make([]byte, 8)
	binary.LittleEndian.PutUint64(want, 224)
	want = append(want, header+" "...)
	// 1.0f = 0x3f800000, -2.0f = 0xc0000000, 0.5 = 0x3fe0000000000000, little-endian.
	data, _ := hex.DecodeString("0000803f" + "000000c0" + "000000000000e03f")
	want = append(want, data...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Write produced\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

// TestRoundTrip writes every dtype, a scalar, an empty tensor, awkward names
// and metadata, and reads back exactly the same thing; writing twice gives
// identical bytes.
func TestRoundTrip(t *testing.T) {
	var tensors []Tensor
	for dtype, size := range dtypeSizes {
		data := make([]byte, 6*size)
		for i := range data {
			data[i] = byte(i*7 + size)
		}
		tensors = append(tensors, Tensor{Name: "t." + dtype, DType: dtype, Shape: []int{2, 3}, Data: data})
	}
	tensors = append(tensors,
		Tensor{Name: "scalar", DType: F32, Shape: []int{}, Data: EncodeFloat32([]float32{3})},
		Tensor{Name: "empty", DType: F64, Shape: []int{0, 4}, Data: []byte{}},
		Tensor{Name: `quote"back\slash ünï <&>`, DType: F32, Shape: []int{1}, Data: EncodeFloat32([]float32{1})},
		Tensor{Name: "", DType: "U8", Shape: []int{3}, Data: []byte{1, 2, 3}},
	)
	metadata := map[string]string{"config": `{"a": [1, 2], "b": "x\ny"}`, "": "", "ünï": "\x00\t"}
	var first, second bytes.Buffer
	if err := Write(&first, tensors, metadata); err != nil {
		t.Fatal(err)
	}
	if err := Write(&second, tensors, metadata); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Error("two writes of the same input differ")
	}
	headerLen := binary.LittleEndian.Uint64(first.Bytes())
	if (8+headerLen)%8 != 0 {
		t.Errorf("data section starts at %d, not a multiple of 8", 8+headerLen)
	}
	got, gotMeta, err := Read(first.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotMeta, metadata) {
		t.Errorf("metadata %q, want %q", gotMeta, metadata)
	}
	if len(got) != len(tensors) {
		t.Fatalf("read %d tensors, wrote %d", len(got), len(tensors))
	}
	for i := range tensors {
		w, g := tensors[i], got[i]
		if g.Name != w.Name || g.DType != w.DType || !reflect.DeepEqual(g.Shape, w.Shape) || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("tensor %d: got %q %s %v %x, want %q %s %v %x", i, g.Name, g.DType, g.Shape, g.Data, w.Name, w.DType, w.Shape, w.Data)
		}
	}
}

// TestReadForeignLayout reads a header laid out as another writer might:
// whitespace, key orders that differ from ours, no metadata, header order
// unlike data order (the reference writer sorts by alignment, then name).
func TestReadForeignLayout(t *testing.T) {
	header := "{ \"w\" : {\"shape\": [1], \"data_offsets\": [4, 8], \"dtype\": \"I32\"},\n" +
		"\t\"v\": {\"data_offsets\": [0, 4], \"dtype\": \"U16\", \"shape\": [2]} }\n  "
	data := []byte{1, 0, 2, 0, 0xff, 0xff, 0xff, 0x7f}
	got, meta, err := Read(file(header, data))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta) != 0 || meta == nil {
		t.Errorf("metadata %v, want an empty non-nil map", meta)
	}
	want := []Tensor{
		{Name: "v", DType: "U16", Shape: []int{2}, Data: data[:4]},
		{Name: "w", DType: "I32", Shape: []int{1}, Data: data[4:]},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// rejectCase is a malformed file and what its error must contain.
type rejectCase struct {
	name string
	in   []byte
	want string
}

// rejectCases are files every reader refuses from their length prefix and
// header, each near one check.
func rejectCases() []rejectCase {
	f32 := func(n int) []byte { return make([]byte, 4*n) }
	ok := `"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`
	return []rejectCase{
		{"empty", nil, "file is 0 bytes, too short"},
		{"seven bytes", []byte{1, 2, 3, 4, 5, 6, 7}, "file is 7 bytes, too short"},
		{"header length beyond file", append([]byte{100, 0, 0, 0, 0, 0, 0, 0}, "{}"...), "header length 100 exceeds the 2 bytes after the length prefix"},
		{"absurd header length", []byte{0, 0, 0, 0, 0, 0, 0, 0x80, '{', '}'}, "exceeds the 100000000-byte limit"},
		{"header not JSON", file(`{"a":`, nil), `header: value of "a": invalid JSON: unexpected end of input`},
		{"header an array", file(`[]`, nil), "does not start with '{'"},
		{"header leading space", file(` {}`, nil), "does not start with '{'"},
		{"header invalid UTF-8", file("{\"\xff\":1}", nil), "not valid UTF-8"},
		{"data after the object", file(`{}{}`, nil), "header: invalid JSON: data after the end of the object"},
		{"duplicate tensor", file("{"+ok+","+ok+"}", f32(2)), `header: duplicate tensor name "a"`},
		{"duplicate entry key", file(`{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": duplicate field "dtype"`},
		{"unknown field", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, f32(2)), `tensor "a": unknown field "x"`},
		{"no dtype", file(`{"a":{"shape":[2],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": no dtype`},
		{"no shape", file(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, f32(2)), `tensor "a": no shape`},
		{"no offsets", file(`{"a":{"dtype":"F32","shape":[2]}}`, f32(2)), `tensor "a": no data_offsets`},
		{"entry not object", file(`{"a":[1]}`, nil), `tensor "a": [1] is not a JSON object`},
		{"unknown dtype", file(`{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": unknown dtype "F33"`},
		{"dtype null", file(`{"a":{"dtype":null,"shape":[2],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": dtype null is not a string`},
		{"shape null", file(`{"a":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}`, f32(1)), `tensor "a": shape: null is not an array`},
		{"shape with null", file(`{"a":{"dtype":"F32","shape":[2,null],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": shape: [2,null] is not an array of integers`},
		{"shape fraction", file(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": shape: 2.0 is not an integer`},
		{"shape exponent", file(`{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": shape: 2e0 is not an integer`},
		{"shape negative", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": shape [-2] has a negative dimension`},
		{"shape negative pair", file(`{"a":{"dtype":"F32","shape":[-2,-1],"data_offsets":[0,8]}}`, f32(2)), `negative dimension`},
		{"shape overflow", file(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, f32(2)), `overflows a 64-bit byte count`},
		{"offset beyond int64", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}}`, f32(2)), `tensor "a": data_offsets: 99999999999999999999 does not fit in 64 bits`},
		{"three offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, f32(2)), `data_offsets [0 8 8]: want [begin, end]`},
		{"end before begin", file(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, f32(2)), `tensor "a": data_offsets [8 0] are not a range`},
		{"negative offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}`, f32(2)), `tensor "a": data_offsets [-8 0] are not a range`},
		{"offsets beyond data", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, f32(2)), `tensor "a": data_offsets [4 12] run past the end of the 8-byte data section (truncated file?)`},
		{"size mismatch", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, f32(2)), `tensor "a": shape [3] of F32 needs 12 bytes, data_offsets [0 8] hold 8`},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}`, f32(3)), `tensor "b": data_offsets [4 12] overlap tensor "a" [0 8]`},
		{"same range twice", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32(2)), `overlap tensor`},
		{"gap", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}`, f32(3)), `tensor "b": data_offsets [8 12] leave data bytes [4, 8) covered by no tensor`},
		{"gap at start", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32(2)), `leave data bytes [0, 4) covered by no tensor`},
		{"trailing bytes", file("{"+ok+"}", f32(3)), `data bytes [8, 12) at the end of the file are covered by no tensor`},
		{"data but no tensors", file(`{}`, f32(1)), `data bytes [0, 4) at the end`},
		{"metadata not object", file(`{"__metadata__":"x"}`, nil), `__metadata__: "x" is not a JSON object`},
		{"metadata number value", file(`{"__metadata__":{"step":3}}`, nil), `__metadata__ "step": value 3 is not a string`},
		{"metadata null value", file(`{"__metadata__":{"step":null}}`, nil), `__metadata__ "step": value null is not a string`},
		{"metadata duplicate key", file(`{"__metadata__":{"k":"1","k":"2"}}`, nil), `__metadata__: duplicate key "k"`},
		{"metadata twice", file(`{"__metadata__":{},"__metadata__":{}}`, nil), `header: duplicate tensor name "__metadata__"`},
		{"truncated data", file("{"+ok+"}", f32(2))[:8+len(ok)+2+5], `run past the end of the 5-byte data section (truncated file?)`},
		{"digest not hex", file(`{"__metadata__":{"data_sha256":"xyz"}}`, nil), `__metadata__ "data_sha256": "xyz" is not a SHA-256`},
	}
}

func TestReadRejects(t *testing.T) {
	for _, c := range rejectCases() {
		t.Run(c.name, func(t *testing.T) {
			tensors, meta, err := Read(c.in)
			if err == nil {
				t.Fatalf("Read accepted it: %+v %v", tensors, meta)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q\ndoes not contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans several lines", err)
			}
		})
	}
}

// smallFile is a valid file of two tensors (float32 and float64) and one
// metadata entry, to cut short.
func smallFile(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	tensors := []Tensor{
		{Name: "a", DType: F32, Shape: []int{2, 2}, Data: EncodeFloat32([]float32{1, 2, 3, 4})},
		{Name: "b", DType: F64, Shape: []int{1}, Data: EncodeFloat64([]float64{5})},
	}
	if err := Write(&buf, tensors, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadTruncatedEverywhere cuts a valid file at every length short of the
// whole and expects an error each time, never a panic or a partial success.
func TestReadTruncatedEverywhere(t *testing.T) {
	whole := smallFile(t)
	for n := 0; n < len(whole); n++ {
		if _, _, err := Read(whole[:n]); err == nil {
			t.Errorf("Read accepted the first %d of %d bytes", n, len(whole))
		}
	}
}

func TestWriteRejects(t *testing.T) {
	good := Tensor{Name: "a", DType: F32, Shape: []int{1}, Data: EncodeFloat32([]float32{1})}
	cases := []struct {
		name     string
		tensors  []Tensor
		metadata map[string]string
		want     string
	}{
		{"duplicate name", []Tensor{good, good}, nil, `duplicate tensor name "a"`},
		{"reserved name", []Tensor{{Name: "__metadata__", DType: F32, Shape: []int{}, Data: make([]byte, 4)}}, nil, `"__metadata__" is reserved`},
		{"unknown dtype", []Tensor{{Name: "x", DType: "f32", Shape: []int{1}, Data: make([]byte, 4)}}, nil, `tensor "x": unknown dtype "f32"`},
		{"negative dim", []Tensor{{Name: "x", DType: F32, Shape: []int{-1}, Data: nil}}, nil, `tensor "x": shape [-1] has a negative dimension`},
		{"short data", []Tensor{{Name: "x", DType: F64, Shape: []int{2}, Data: make([]byte, 15)}}, nil, `tensor "x": shape [2] of F64 needs 16 bytes, Data has 15`},
		{"invalid UTF-8 name", []Tensor{{Name: "\xff", DType: F32, Shape: []int{}, Data: make([]byte, 4)}}, nil, `not valid UTF-8`},
		{"invalid UTF-8 metadata", []Tensor{good}, map[string]string{"k": "\xff"}, `metadata "k": key and value must be valid UTF-8`},
		{"digest set by the caller", []Tensor{good}, map[string]string{DigestKey: "x"}, `metadata key "data_sha256" is reserved`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, c.tensors, c.metadata)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
}

// TestFloatCodecs checks the helpers against encoding/binary (an independent
// encoder) and that every bit survives, including NaN payloads and -0.
func TestFloatCodecs(t *testing.T) {
	f32 := []float32{0, float32(math.Copysign(0, -1)), 1, -2.5, math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), math.Float32frombits(0x7fc00001)}
	f64 := []float64{0, math.Copysign(0, -1), 1, -2.5, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.Inf(-1), math.Float64frombits(0x7ff8000000000abc)}
	checkCodec(t, "F32", f32, EncodeFloat32, DecodeFloat32)
	checkCodec(t, "F64", f64, EncodeFloat64, DecodeFloat64)
}

// checkCodec checks that encode writes values as encoding/binary does, that
// decode reads them back bit for bit, and that decode refuses one and a half
// values' bytes.
func checkCodec[T float32 | float64](t *testing.T, dtype string, values []T, encode func([]T) []byte, decode func([]byte) ([]T, error)) {
	t.Helper()
	ref := littleEndian(t, values)
	if got := encode(values); !bytes.Equal(got, ref) {
		t.Errorf("%s: encoded %x, want %x", dtype, got, ref)
	}
	back, err := decode(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := littleEndian(t, back); !bytes.Equal(got, ref) {
		t.Errorf("%s: decoded %x, want the bits %x", dtype, got, ref)
	}
	n := binary.Size(values[0]) * 3 / 2
	want := fmt.Sprintf("%d bytes is not a whole number of %s values", n, dtype)
	if _, err := decode(make([]byte, n)); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: decoding %d bytes: %v, want %q", dtype, n, err, want)
	}
}

// littleEndian is values as encoding/binary writes them, little-endian.
func littleEndian[T float32 | float64](t *testing.T, values []T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := binary.Write(&b, binary.LittleEndian, values); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestReadFile: errors name the file once, and a missing file is still
// recognisable with errors.Is.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.safetensors")
	_, _, err := ReadFile(missing)
	if err == nil || err.Error() != "safetensors file "+missing+": open: no such file or directory" {
		t.Errorf("missing file: error %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(%v, fs.ErrNotExist) is false", err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(bad, file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 4)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = ReadFile(bad)
	want := "safetensors file " + bad + `: tensor "a": data_offsets [0 8] run past the end of the 4-byte data section (truncated file?)`
	if err == nil || err.Error() != want {
		t.Errorf("corrupt file: error %v\nwant %s", err, want)
	}
	good := filepath.Join(dir, "good.safetensors")
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{{Name: "x", DType: F64, Shape: []int{1}, Data: EncodeFloat64([]float64{2})}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tensors, _, err := ReadFile(good)
	if err != nil || len(tensors) != 1 || tensors[0].Name != "x" {
		t.Errorf("good file: %+v, %v", tensors, err)
	}
}

// TestReadFromMatchesRead: reading from a stream, with the size known (a
// regular file) or not (a pipe), accepts what Read accepts and refuses every
// truncation of a valid file with Read's own message.
func TestReadFromMatchesRead(t *testing.T) {
	whole := smallFile(t)
	for n := 0; n <= len(whole); n++ {
		wantTensors, wantMeta, wantErr := Read(whole[:n])
		for _, size := range []int64{int64(n), -1} {
			got, meta, err := readFrom(bytes.NewReader(whole[:n]), size, MaxFileLen, nil)
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, wantTensors) || !reflect.DeepEqual(meta, wantMeta) {
				t.Errorf("first %d of %d bytes, size %d: got %v, %v\nwant %v, %v", n, len(whole), size, got, err, wantTensors, wantErr)
			}
		}
	}
}

// endless is a reader of prefix followed by zero bytes without end; it
// counts the bytes handed out.
type endless struct {
	prefix []byte
	read   int64
}

func (r *endless) Read(p []byte) (int, error) {
	n := copy(p, r.prefix)
	r.prefix = r.prefix[n:]
	clear(p[n:])
	r.read += int64(len(p))
	return len(p), nil
}

// TestReadFromStopsAtTheData: from a stream that never ends, readFrom reads
// the data the header describes and at most a little more (io.ReadFull asks
// for one byte after it) before refusing the trailing bytes; a header
// describing more data than the limit is refused before any data is read;
// the zeros of /dev/zero are a zero-length header.
func TestReadFromStopsAtTheData(t *testing.T) {
	valid := file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8))
	r := &endless{prefix: valid}
	_, _, err := readFrom(r, -1, MaxFileLen, nil)
	if want := "data bytes from 8 on at the end of the file are covered by no tensor"; err == nil || err.Error() != want {
		t.Errorf("valid file, then zeros: error %v, want %s", err, want)
	}
	if r.read > int64(len(valid))+1 {
		t.Errorf("read %d bytes of a %d-byte file followed by zeros", r.read, len(valid))
	}

	header := `{"a":{"dtype":"F64","shape":[1000,1000],"data_offsets":[0,8000000]}}`
	r = &endless{prefix: file(header, nil)}
	_, _, err = readFrom(r, -1, 1<<20, nil)
	if want := "the header describes 8000000 bytes of tensor data, which with the header exceeds the 1048576-byte file limit"; err == nil || err.Error() != want {
		t.Errorf("data beyond the limit: error %v, want %s", err, want)
	}
	if r.read != int64(8+len(header)) {
		t.Errorf("read %d bytes, want only the %d of length and header", r.read, 8+len(header))
	}

	r = &endless{}
	_, _, err = readFrom(r, -1, MaxFileLen, nil)
	if want := "header does not start with '{' (not a safetensors file?)"; err == nil || err.Error() != want {
		t.Errorf("zeros: error %v, want %s", err, want)
	}
}

// TestReadFileLimits: ReadFileLimit refuses a regular file over the limit
// without reading it; an exact fit loads. (Non-regular paths:
// TestReadFileRefusesNonRegular.)
func TestReadFileLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	valid := file(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}`, []byte{1, 2, 3})
	if err := os.WriteFile(path, valid, 0o644); err != nil {
		t.Fatal(err)
	}
	if tensors, _, err := ReadFileLimit(path, int64(len(valid))); err != nil || len(tensors) != 1 {
		t.Errorf("file of exactly the limit: %v, %v", tensors, err)
	}
	_, _, err := ReadFileLimit(path, int64(len(valid)-1))
	if want := fmt.Sprintf("file is %d bytes, larger than the %d-byte limit", len(valid), len(valid)-1); err == nil || err.Error() != want {
		t.Errorf("file over the limit: error %v, want %s", err, want)
	}
}
