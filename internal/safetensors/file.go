package safetensors

import (
	"crypto/sha256"
	"hash"
	"io"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
)

// chunkSize is the most tensor data a File holds at once besides the values
// it returns; a multiple of every dtype's size, so chunks hold whole elements.
const chunkSize = 1 << 20

// Info describes one tensor of a File: its name, dtype and shape, and its
// bytes [Begin, End) of the data section (the header's data_offsets).
type Info struct {
	Name       string
	DType      string
	Shape      []int
	Begin, End int64
}

// clone is a copy of in that shares nothing with it.
func (in Info) clone() Info {
	in.Shape = append([]int{}, in.Shape...)
	return in
}

// Len is the number of elements (1 for a scalar).
func (in Info) Len() int {
	n := 1
	for _, d := range in.Shape {
		n *= d
	}
	return n
}

// File is an open safetensors file whose header has been read and checked;
// tensor data is read only when asked for, through ReadAt, so its methods
// may be called in any order and from several goroutines at once.
type File struct {
	f        Source
	whole    bool   // ReadAll reads skipped tensors too (OpenSource)
	start    int64  // offset of the data section in the file
	tensors  []Info // in data order, tiling the data section
	byName   map[string]int
	metadata map[string]string // without DigestKey
	digest   string            // "" when the file records none
	read     func(bytes int64) // hears each chunk read (Counted); nil: none
}

// Open opens the safetensors file at path and reads and checks its length
// prefix and header with the checks and messages of ReadFileLimit: a path
// that is not a regular file, a file of more than limit bytes, and a header
// whose tensors do not exactly tile the rest of the file are refused before
// any tensor data is read.
//
// Errors do not name the file. One from the file system is returned as os
// gave it, an *os.PathError, for the caller to word.
func Open(path string, limit int64) (*File, error) { return OpenBounded(path, limit, Bounds{}) }

// OpenBounded is Open that also refuses a header listing more tensors than
// bounds allow, with a *TooManyTensorsError, as soon as the parse reaches
// the first one too many: a caller that knows how many tensors the file
// may hold does not pay for decoding more.
func OpenBounded(path string, limit int64, bounds Bounds) (*File, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	// Bounded by the size the file had when opened, the header cannot be
	// read from bytes appended since.
	h, err := readHeader(io.NewSectionReader(f, 0, info.Size()), info.Size(), limit, bounds)
	if err != nil {
		f.Close()
		return nil, err
	}
	return newFile(f, h), nil
}

// Source is what OpenSource reads a file from: the file, open, read at
// offsets and closed with the File.
type Source interface {
	io.ReaderAt
	io.Closer
}

// OpenSource is OpenBounded of a file already open as src, of size bytes
// (taken as the file's size, as Open takes its Stat). ReadAll of the File
// reads every byte of the data section, in order, skipped tensors too, so
// that a source that hashes what it serves (safefile.HashedFile) sees the
// whole file in one pass: prefix, header, data. On an error src is not
// closed.
func OpenSource(src Source, size, limit int64, bounds Bounds) (*File, error) {
	h, err := readHeader(io.NewSectionReader(src, 0, size), size, limit, bounds)
	if err != nil {
		return nil, err
	}
	file := newFile(src, h)
	file.whole = true
	return file, nil
}

func newFile(f Source, h fileHeader) *File {
	return &File{f: f, start: h.dataStart(), tensors: h.tensors, byName: h.byName, metadata: h.metadata, digest: h.digest}
}

// Counted is f reading the same file and telling read the size of each
// chunk of tensor data it reads (a progress count: at most one chunk,
// 1 MiB, between two calls).
func (f *File) Counted(read func(bytes int64)) *File {
	c := *f
	c.read = read
	return &c
}

// NumTensors is the number of tensors, without copying their Info.
func (f *File) NumTensors() int { return len(f.tensors) }

// DataLen is the length in bytes of the data section.
func (f *File) DataLen() int64 {
	if n := len(f.tensors); n > 0 {
		return f.tensors[n-1].End
	}
	return 0
}

// Tensors lists the file's tensors in data order.
func (f *File) Tensors() []Info {
	out := make([]Info, len(f.tensors))
	for i, in := range f.tensors {
		out[i] = in.clone()
	}
	return out
}

// Metadata is the header's "__metadata__", without DigestKey; never nil.
func (f *File) Metadata() map[string]string {
	out := make(map[string]string, len(f.metadata))
	for k, v := range f.metadata {
		out[k] = v
	}
	return out
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Float32 reads the named tensor as float32s: F32 bit for bit, F16 and BF16
// exactly, F64 rounded to nearest; any other dtype is an error. It holds no
// more of the tensor's bytes at once than one chunk (1 MiB).
func (f *File) Float32(name string) ([]float32, error) { return readTensor[float32](f, name) }

// Float64 reads the named tensor as float64s, as Float32 does; every float
// dtype converts exactly (F64 bit for bit).
func (f *File) Float64(name string) ([]float64, error) { return readTensor[float64](f, name) }

func readTensor[T float](f *File, name string) ([]T, error) {
	i, ok := f.byName[name]
	if !ok {
		return nil, errors.Errorf("no tensor %q in the file", name)
	}
	in := f.tensors[i]
	if err := checkFloat[T](in); err != nil {
		return nil, err
	}
	dst := make([]T, in.Len())
	if err := readInto(f, in, dst, nil, chunkBuffer(in.End-in.Begin)); err != nil {
		return nil, err
	}
	return dst, nil
}

// chunkBuffer is a buffer for readInto to read n bytes with: one chunk, or
// n bytes when that is less.
func chunkBuffer(n int64) []byte { return make([]byte, min(chunkSize, n)) }

// readInto reads the data of tensor in, one buf-sized chunk at a time,
// feeding each chunk to h and decoding it into dst when they are not nil.
func readInto[T float](f *File, in Info, dst []T, h hash.Hash, buf []byte) error {
	size := int64(dtypeSizes[in.DType])
	for at := in.Begin; at < in.End; {
		chunk := buf[:min(int64(len(buf)), in.End-at)]
		if _, err := f.f.ReadAt(chunk, f.start+at); err == io.EOF {
			return errors.Errorf("tensor %q: the file ends inside its data (truncated since it was opened?)", in.Name)
		} else if err != nil {
			return err
		}
		if h != nil {
			h.Write(chunk)
		}
		if dst != nil {
			decodeFloats(dst[(at-in.Begin)/size:], chunk, in.DType)
		}
		if f.read != nil {
			f.read(int64(len(chunk)))
		}
		at += int64(len(chunk))
	}
	return nil
}

// Verify reads the whole data section once, in order, and compares its
// SHA-256 with the one the file records (DigestKey), with the message of
// the whole-file readers on a mismatch. checked says whether a digest was
// compared: false, with no error, when the file records none (the caller
// decides what to say); true with the mismatch as err when it differs.
func (f *File) Verify() (checked bool, err error) {
	return f.ReadAll(func(Info) (any, error) { return nil, nil })
}

// ReadAll reads every tensor once, in data order, and checks the digest on
// the way, so a loader that wants every tensor reads the file once. visit
// sees each tensor's Info and returns where its values go: a []float32 or
// []float64 of Info.Len() elements, or nil to skip the tensor. Only after
// the last tensor is the digest known: on an error the values already
// decoded must be discarded. checked is as for Verify.
func (f *File) ReadAll(visit func(Info) (dst any, err error)) (checked bool, err error) {
	var h hash.Hash
	if f.digest != "" {
		h = sha256.New()
	}
	buf := chunkBuffer(f.DataLen())
	for _, in := range f.tensors {
		dst, err := visit(in.clone())
		if err != nil {
			return false, err
		}
		if err := readDst(f, in, dst, h, buf); err != nil {
			return false, err
		}
	}
	if h == nil {
		return false, nil
	}
	return true, compareDigest(f.digest, h)
}

// readDst reads tensor in into dst, as visit returned it for ReadAll.
func readDst(f *File, in Info, dst any, h hash.Hash, buf []byte) error {
	switch d := dst.(type) {
	case nil:
		if h == nil && !f.whole {
			return nil
		}
		return readInto[float32](f, in, nil, h, buf)
	case []float32:
		return readChecked(f, in, d, h, buf)
	case []float64:
		return readChecked(f, in, d, h, buf)
	}
	return errors.Errorf("tensor %q: ReadAll's visit returned a %T; want a []float32, a []float64 or nil", in.Name, dst)
}

// readChecked is readInto once dst is known to fit in.
func readChecked[T float](f *File, in Info, dst []T, h hash.Hash, buf []byte) error {
	if err := checkFloat[T](in); err != nil {
		return err
	}
	if len(dst) != in.Len() {
		return errors.Errorf("tensor %q: ReadAll's visit returned %d values for its %d elements", in.Name, len(dst), in.Len())
	}
	return readInto(f, in, dst, h, buf)
}
