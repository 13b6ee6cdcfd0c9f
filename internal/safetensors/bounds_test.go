package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// manyTensors is a file of n tensors of shape (0, 1) in F32, so with no
// data, then one of 1 element, as a header forged to be costly is.
func manyTensors(n int) []byte {
	header := []byte{'{'}
	for i := range n {
		header = fmt.Appendf(header, `"model.layers.%d.self_attn.q_proj.weight":{"dtype":"F32","shape":[0,1],"data_offsets":[0,0]},`, i)
	}
	header = append(header, `"last":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`...)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(out, header...), 0, 0, 0, 0)
}

// allocated is the bytes run allocates.
func allocated(run func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOpenBoundedRefusesEarly: a header listing more tensors, or more
// tensors of no elements, than the caller's bounds is refused at the first
// one too many, having decoded no further: what the refusal allocates is
// the header's bytes and little more, where decoding 100,000 records
// costs several times that.
func TestOpenBoundedRefusesEarly(t *testing.T) {
	data := manyTensors(100_000)
	path := filepath.Join(t.TempDir(), "many.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		bounds Bounds
		want   string
	}{
		{Bounds{Tensors: 1000, ZeroSize: 1000}, "header lists more than 1000 tensors, the most allowed"},
		{Bounds{Tensors: 200_000, ZeroSize: 10}, "header lists more than 10 tensors of no elements (a zero in the shape), the most allowed"},
	} {
		var err error
		alloc := allocated(func() {
			var f *File
			if f, err = OpenBounded(path, MaxFileLen, c.bounds); err == nil {
				f.Close()
			}
		})
		var tooMany *TooManyTensorsError
		if !errors.As(err, &tooMany) || err.Error() != c.want {
			t.Fatalf("bounds %+v: error %v, want %q", c.bounds, err, c.want)
		}
		if limit := uint64(len(data)) + 1<<20; alloc > limit {
			t.Errorf("bounds %+v: refusing allocated %d bytes, want at most the %d-byte file and 1 MiB", c.bounds, alloc, len(data))
		}
	}
	f, err := OpenBounded(path, MaxFileLen, Bounds{Tensors: 100_001, ZeroSize: 100_000})
	if err != nil {
		t.Fatalf("within its bounds: %v", err)
	}
	defer f.Close()
	if f.NumTensors() != 100_001 || f.DataLen() != 4 {
		t.Errorf("NumTensors %d, DataLen %d; want 100001 and 4", f.NumTensors(), f.DataLen())
	}
}

// TestOpenAllocatesLinearly: decoding a header costs a bounded number of
// bytes per record (Open of a 100,000-record header allocated over a
// gigabyte before records were decoded in one pass).
func TestOpenAllocatesLinearly(t *testing.T) {
	data := manyTensors(100_000)
	path := filepath.Join(t.TempDir(), "many.safetensors")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	alloc := allocated(func() {
		var f *File
		if f, err = Open(path, MaxFileLen); err == nil {
			f.Close()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if perRecord := (alloc - uint64(len(data))) / 100_000; perRecord > 400 {
		t.Errorf("Open allocated %d bytes beyond the header per tensor, want at most 400", perRecord)
	}
}

// entrySeeds are tensor records for FuzzEntryFields: as writers write them,
// and near each way commonFields declines one.
var entrySeeds = []string{
	`{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}`,
	` { "shape" : [ ] , "dtype" : "BF16" , "data_offsets" : [ 8 , 10 ] } `,
	`{"dtype":"F32","shape":[0,1],"data_offsets":[0,0]}`,
	`{"dtype":"F\u0033\u0032","shape":[2],"data_offsets":[0,8]}`,
	`{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}`,
	`{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}`,
	`{"dtype":"F32","shape":[2],"data_offsets":[0,99999999999999999999]}`,
	`{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}`,
	`{"dtype":"X","shape":[2],"data_offsets":[0,8]}`,
	`{"shape":[2],"data_offsets":[0,8]}`,
	`{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}`,
	`[1]`,
}

// FuzzEntryFields: whatever record commonFields reads, entryFields reads
// the same; so a header reads the same whichever of the two read a record.
func FuzzEntryFields(f *testing.F) {
	for _, s := range entrySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		fast, ok := commonFields(raw, nil)
		if !ok {
			return
		}
		slow, err := entryFields(raw)
		if err != nil || fmt.Sprint(fast) != fmt.Sprint(slow) {
			t.Fatalf("%s: commonFields %+v, entryFields %+v (%v)", raw, fast, slow, err)
		}
	})
}

// TestCommonFieldsReads: the records writers write are read without the
// decoder; the others are left to it.
func TestCommonFieldsReads(t *testing.T) {
	for i, s := range entrySeeds {
		_, ok := commonFields([]byte(s), nil)
		if want := i < 3; ok != want {
			t.Errorf("%s: read %v, want %v", s, ok, want)
		}
	}
}
