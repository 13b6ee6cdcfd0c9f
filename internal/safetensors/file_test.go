package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// written returns the bytes Write makes of tensors and metadata.
func written(t testing.TB, tensors []Tensor, metadata map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// openBytes writes data to a file, opens it with Open and closes it when the
// test ends.
func openBytes(t testing.TB, data []byte) *File {
	t.Helper()
	f, err := Open(onDisk(t, data), MaxFileLen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// halfs encodes little-endian 16-bit patterns (F16 or BF16 data).
func halfs(bits ...uint16) []byte {
	b := make([]byte, 0, 2*len(bits))
	for _, h := range bits {
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	return b
}

// dtypeFile holds one tensor of each float dtype and an integer one; the
// F32 and F64 values include a NaN payload, -0, a subnormal and infinities
// that must come back bit for bit. big spans several chunks.
func dtypeFile(t testing.TB) []byte {
	big := make([]uint16, chunkSize) // 2 MiB of F16: two whole chunks
	for i := range big {
		big[i] = uint16(i*7 + 1)
	}
	return written(t, []Tensor{
		{Name: "f32", DType: F32, Shape: []int{2, 3}, Data: EncodeFloat32(f32Values)},
		{Name: "f64", DType: F64, Shape: []int{6}, Data: EncodeFloat64(f64Values)},
		{Name: "f16", DType: F16, Shape: []int{3}, Data: halfs(0x3c00, 0xc000, 0x0001)},
		{Name: "bf16", DType: BF16, Shape: []int{1, 2}, Data: halfs(0x3f80, 0x4049)},
		{Name: "big", DType: F16, Shape: []int{len(big)}, Data: halfs(big...)},
		{Name: "i32", DType: "I32", Shape: []int{1}, Data: make([]byte, 4)},
	}, map[string]string{"k": "v"})
}

var (
	f32Values = []float32{math.Float32frombits(0x7fc00abc), float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32,
		float32(math.Inf(-1)), 1.5, math.MaxFloat32}
	f64Values = []float64{math.Float64frombits(0x7ff8000000000abc), math.Copysign(0, -1), math.SmallestNonzeroFloat64,
		math.Inf(1), 1.0 / 3, math.MaxFloat64}
)

// TestFloatEachDType: Float32 of F32 and Float64 of F64 are bit for bit;
// every float dtype converts to both types (F64 to float32 rounding as Go
// does); a tensor spanning several chunks lands at the right indices.
func TestFloatEachDType(t *testing.T) {
	f := openBytes(t, dtypeFile(t))
	bits32 := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	got32, err := f.Float32("f32")
	if err != nil || !reflect.DeepEqual(bits32(got32), bits32(f32Values)) {
		t.Errorf("Float32(f32) = %x, %v; want %x", bits32(got32), err, bits32(f32Values))
	}
	got64, err := f.Float64("f64")
	if err != nil || !reflect.DeepEqual(EncodeFloat64(got64), EncodeFloat64(f64Values)) {
		t.Errorf("Float64(f64) = %v, %v; want %v bit for bit", got64, err, f64Values)
	}
	narrowed, err := f.Float32("f64")
	for i, v := range f64Values {
		if err != nil || !sameFloat(float64(narrowed[i]), float64(float32(v))) {
			t.Errorf("Float32(f64)[%d] = %v, %v; want %v", i, narrowed, err, float32(v))
		}
	}
	for name, want := range map[string][]float64{
		"f16":  {1, -2, math.Ldexp(1, -24)},
		"bf16": {1, 3.140625},
	} {
		g32, err32 := f.Float32(name)
		g64, err64 := f.Float64(name)
		if err32 != nil || err64 != nil || len(g32) != len(want) || len(g64) != len(want) {
			t.Fatalf("%s: %v %v, %v %v; want %v", name, g32, err32, g64, err64, want)
		}
		for i := range want {
			if float64(g32[i]) != want[i] || g64[i] != want[i] {
				t.Errorf("%s[%d]: float32 %v, float64 %v, want %v", name, i, g32[i], g64[i], want[i])
			}
		}
	}
	big, err := f.Float32("big")
	if err != nil || len(big) != chunkSize {
		t.Fatalf("Float32(big): %d values, %v", len(big), err)
	}
	for _, i := range []int{0, chunkSize/2 - 1, chunkSize / 2, chunkSize - 1} {
		if want := halfToFloat32(uint16(i*7 + 1)); !sameFloat(float64(big[i]), float64(want)) {
			t.Errorf("big[%d] = %v, want %v", i, big[i], want)
		}
	}
}

// TestFloatRefuses: a name the file lacks and a dtype that is not a float
// are one-line errors naming the tensor.
func TestFloatRefuses(t *testing.T) {
	f := openBytes(t, dtypeFile(t))
	if _, err := f.Float32("nope"); err == nil || err.Error() != `no tensor "nope" in the file` {
		t.Errorf("missing tensor: %v", err)
	}
	if _, err := f.Float64("i32"); err == nil || err.Error() != `tensor "i32" has dtype I32; only F32, F64, F16 and BF16 convert to float64` {
		t.Errorf("integer tensor: %v", err)
	}
}

// TestReadReverseOrder: tensors read last to first through one File give
// the values read first to last through another.
func TestReadReverseOrder(t *testing.T) {
	data := dtypeFile(t)
	forward, backward := openBytes(t, data), openBytes(t, data)
	infos := forward.Tensors()
	values := map[string][]float64{}
	for _, in := range infos[:len(infos)-1] { // all but i32
		v, err := forward.Float64(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		values[in.Name] = v
	}
	for i := len(infos) - 2; i >= 0; i-- {
		name := infos[i].Name
		v, err := backward.Float64(name)
		if err != nil || !reflect.DeepEqual(EncodeFloat64(v), EncodeFloat64(values[name])) {
			t.Errorf("%s read last: %v, %v; read first: %v", name, v, err, values[name])
		}
	}
}

// TestOpenHeader: Tensors lists every tensor in data order with its shape
// and byte range; Metadata is the caller's, without the digest.
func TestOpenHeader(t *testing.T) {
	f := openBytes(t, written(t, []Tensor{
		{Name: "z", DType: F32, Shape: []int{2, 1}, Data: EncodeFloat32([]float32{1, 2})},
		{Name: "a", DType: BF16, Shape: []int{}, Data: halfs(0x3f80)},
	}, map[string]string{"k": "v"}))
	want := []Info{{Name: "z", DType: F32, Shape: []int{2, 1}, Begin: 0, End: 8}, {Name: "a", DType: BF16, Shape: []int{}, Begin: 8, End: 10}}
	if got := f.Tensors(); !reflect.DeepEqual(got, want) || got[0].Len() != 2 || got[1].Len() != 1 {
		t.Errorf("Tensors() = %+v, want %+v", got, want)
	}
	if got := f.Metadata(); !reflect.DeepEqual(got, map[string]string{"k": "v"}) {
		t.Errorf("Metadata() = %v", got)
	}
}

// TestOpenRefusesAsRead: every malformed header, and every truncation of a
// valid file, is refused by Open with the message Read gives.
func TestOpenRefusesAsRead(t *testing.T) {
	cases := rejectCases()
	whole := smallFile(t)
	for n := range len(whole) {
		cases = append(cases, rejectCase{name: fmt.Sprintf("first %d bytes", n), in: whole[:n]})
	}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	for _, c := range cases {
		_, _, want := Read(c.in)
		if err := os.WriteFile(path, c.in, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path, MaxFileLen)
		if err == nil {
			f.Close()
		}
		if want == nil || fmt.Sprint(err) != want.Error() {
			t.Errorf("%s: Open: %v\nRead: %v", c.name, err, want)
		}
	}
}

// TestOpenHugeClaim: a small file whose header claims 4 GiB of data is
// refused from the header, before any allocation for the data, whether the
// claim runs past the file or past the limit.
func TestOpenHugeClaim(t *testing.T) {
	header := `{"a":{"dtype":"F32","shape":[1073741824],"data_offsets":[0,4294967296]}}`
	_, err := Open(onDisk(t, file(header, make([]byte, 64))), MaxFileLen)
	if want := `tensor "a": data_offsets [0 4294967296] run past the end of the 64-byte data section (truncated file?)`; err == nil || err.Error() != want {
		t.Errorf("claim past the file: %v, want %s", err, want)
	}
	_, err = Open(onDisk(t, file(header, nil)), 1<<20)
	if want := `tensor "a": data_offsets [0 4294967296] run past the end of the 0-byte data section (truncated file?)`; err == nil || err.Error() != want {
		t.Errorf("claim past the limit: %v, want %s", err, want)
	}
	small := smallFile(t)
	_, err = Open(onDisk(t, small), int64(len(small)-1))
	if want := fmt.Sprintf("file is %d bytes, larger than the %d-byte limit", len(small), len(small)-1); err == nil || err.Error() != want {
		t.Errorf("file over the limit: %v, want %s", err, want)
	}
}

// TestReadAfterTruncation: a file cut short after Open is an error naming
// the tensor, not short values.
func TestReadAfterTruncation(t *testing.T) {
	data := smallFile(t)
	path := onDisk(t, data)
	f, err := Open(path, MaxFileLen)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Truncate(path, int64(len(data)-4)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Float64("b"); err == nil || err.Error() != `tensor "b": the file ends inside its data (truncated since it was opened?)` {
		t.Errorf("Float64 of a truncated file: %v", err)
	}
}

// TestVerify: Verify and ReadAll catch a flipped bit with the whole-file
// readers' message (checked, and wrong) and pass the intact file; without a
// digest both say checked=false and no error.
func TestVerify(t *testing.T) {
	good := smallFile(t)
	bad, want := flipBit(t, good, 3, 5)
	readAll := func(f *File) (bool, error) {
		return f.ReadAll(func(in Info) (any, error) { return make([]float32, in.Len()), nil })
	}
	for name, check := range map[string]func(*File) (bool, error){"Verify": (*File).Verify, "ReadAll": readAll} {
		if checked, err := check(openBytes(t, good)); !checked || err != nil {
			t.Errorf("%s, intact file: checked %v, %v", name, checked, err)
		}
		if checked, err := check(openBytes(t, bad)); !checked || err == nil || err.Error() != want {
			t.Errorf("%s, flipped bit: checked %v, %v\nwant %s", name, checked, err, want)
		}
		plain := file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, EncodeFloat32([]float32{1}))
		if checked, err := check(openBytes(t, plain)); checked || err != nil {
			t.Errorf("%s, no digest: checked %v, %v; want false, nil", name, checked, err)
		}
	}
}

// TestReadAll: the values ReadAll delivers (float32 or float64, as visit
// asks) equal Float32's and Float64's; skipped tensors still count for the
// digest; bad destinations and visit's own errors stop it.
func TestReadAll(t *testing.T) {
	data := dtypeFile(t)
	f := openBytes(t, data)
	got := map[string]any{}
	checked, err := f.ReadAll(func(in Info) (any, error) {
		switch in.DType {
		case F64:
			got[in.Name] = make([]float64, in.Len())
		case F32, F16, BF16:
			got[in.Name] = make([]float32, in.Len())
		default:
			return nil, nil
		}
		return got[in.Name], nil
	})
	if !checked || err != nil || len(got) != 5 {
		t.Fatalf("ReadAll: checked %v, %v, %d tensors", checked, err, len(got))
	}
	for name, values := range got {
		var delivered, want []byte
		if v, wide := values.([]float64); wide {
			w, err := f.Float64(name)
			if err != nil {
				t.Fatal(err)
			}
			delivered, want = EncodeFloat64(v), EncodeFloat64(w)
		} else {
			w, err := f.Float32(name)
			if err != nil {
				t.Fatal(err)
			}
			delivered, want = EncodeFloat32(values.([]float32)), EncodeFloat32(w)
		}
		if !bytes.Equal(delivered, want) {
			t.Errorf("%s: ReadAll and Float32/Float64 differ", name)
		}
	}
	stop := fmt.Errorf("visit says stop")
	for _, c := range []struct {
		dst  func(Info) (any, error)
		want string
	}{
		{func(in Info) (any, error) { return make([]float32, in.Len()+1), nil }, `tensor "f32": ReadAll's visit returned 7 values for its 6 elements`},
		{func(in Info) (any, error) { return make([]int, in.Len()), nil }, `tensor "f32": ReadAll's visit returned a []int; want a []float32, a []float64 or nil`},
		{func(in Info) (any, error) {
			if in.DType == "I32" {
				return make([]float32, 1), nil
			}
			return nil, nil
		}, `tensor "i32" has dtype I32; only F32, F64, F16 and BF16 convert to float32`},
		{func(Info) (any, error) { return nil, stop }, stop.Error()},
	} {
		if checked, err := f.ReadAll(c.dst); checked || err == nil || err.Error() != c.want {
			t.Errorf("ReadAll: checked %v, %v; want %s", checked, err, c.want)
		}
	}
}

// TestReadMemory: reading a 3 MiB F16 tensor into float32s, alone or through
// ReadAll, allocates the 6 MiB of values and one chunk, not the tensor's
// bytes besides.
func TestReadMemory(t *testing.T) {
	const n = 3 << 19 // 1.5 Mi elements: 3 MiB of F16
	f := openBytes(t, written(t, []Tensor{{Name: "w", DType: F16, Shape: []int{n}, Data: make([]byte, 2*n)}}, nil))
	allowed := uint64(4*n + chunkSize + 256<<10)
	for name, read := range map[string]func() error{
		"Float32": func() error { _, err := f.Float32("w"); return err },
		"ReadAll": func() error {
			_, err := f.ReadAll(func(in Info) (any, error) { return make([]float32, in.Len()), nil })
			return err
		},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := read()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > allowed {
			t.Errorf("%s allocated %d bytes, want at most %d (values, one chunk, slack)", name, got, allowed)
		}
	}
}

// TestCounted: a Counted file reports every byte of tensor data ReadAll
// reads, a chunk at a time, and reads the same values; the file it was
// made from reports nothing.
func TestCounted(t *testing.T) {
	big := make([]float32, chunkSize/4+100) // two chunks
	f := openBytes(t, written(t, []Tensor{
		{Name: "a", DType: "F32", Shape: []int{len(big)}, Data: EncodeFloat32(big)},
		{Name: "b", DType: "F32", Shape: []int{3}, Data: EncodeFloat32([]float32{1, 2, 3})},
	}, nil))
	var calls int
	var read int64
	counted := f.Counted(func(n int64) { calls++; read += n })
	var b []float32
	if _, err := counted.ReadAll(func(in Info) (any, error) {
		dst := make([]float32, in.Len())
		if in.Name == "b" {
			b = dst
		}
		return dst, nil
	}); err != nil {
		t.Fatal(err)
	}
	if read != f.DataLen() || calls != 3 {
		t.Errorf("counted %d bytes in %d calls, want the %d of the data section in 3 chunks", read, calls, f.DataLen())
	}
	if !reflect.DeepEqual(b, []float32{1, 2, 3}) {
		t.Errorf("the counted file read b as %v", b)
	}
	if _, err := f.Verify(); err != nil || calls != 3 {
		t.Errorf("the uncounted file: %v, and %d calls", err, calls)
	}
}
