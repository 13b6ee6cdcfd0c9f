package ops

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/safetensors"
)

// Stored is a weight matrix (Rows, Cols) kept in its file's dtype where
// the file's mapping holds it, read in place: the rows of Parts in order,
// each part whole rows of little-endian elements of DType (BF16 or F16).
// A fused parameter whose file stores it in pieces (Llama's q_proj, k_proj
// and v_proj rows of the fused qkv) is one part per piece, so nothing is
// copied to fuse it.
type Stored struct {
	Name       string // the parameter's, for messages and the op's identity
	Rows, Cols int
	DType      string
	Parts      []StoredPart
}

// StoredPart is Rows rows of a Stored matrix, mapped from File, where
// they are the tensor called Tensor ("" for none).
type StoredPart struct {
	Rows   int
	Data   []byte
	File   string // as messages name it
	Tensor string
}

// PartAt is the part holding row of s and the row's index in it.
func (s *Stored) PartAt(row int) (StoredPart, int) {
	for _, p := range s.Parts {
		if row < p.Rows {
			return p, row
		}
		row -= p.Rows
	}
	return StoredPart{}, -1
}

// elemSize is the bytes of one element of s.DType.
func (s *Stored) elemSize() int {
	size, _ := safetensors.DTypeSize(s.DType)
	return size
}

// Bytes is the size of s's data.
func (s *Stored) Bytes() int64 { return int64(s.Rows) * int64(s.Cols) * int64(s.elemSize()) }

// Check refuses a Stored whose dtype is not BF16 or F16 or whose parts do
// not hold exactly its rows.
func (s *Stored) Check() error {
	if s.half() == 0 {
		return errors.Errorf("weight %s: dtype %s; a stored weight is BF16 or F16", s.Name, s.DType)
	}
	rows := 0
	for _, p := range s.Parts {
		if want := p.Rows * s.Cols * s.elemSize(); len(p.Data) != want {
			return errors.Errorf("weight %s: a part of %d rows holds %d bytes, want %d", s.Name, p.Rows, len(p.Data), want)
		}
		rows += p.Rows
	}
	if rows != s.Rows {
		return errors.Errorf("weight %s: parts hold %d rows, want %d", s.Name, rows, s.Rows)
	}
	return nil
}

// half is s's dtype as the kernels name it, 0 for another.
func (s *Stored) half() kernels.Half {
	switch s.DType {
	case safetensors.BF16:
		return kernels.BF16
	case safetensors.F16:
		return kernels.F16
	}
	return 0
}

// halves are s's parts as the kernels read them: 16-bit elements, in
// place (the file's little-endian is the machine's on every platform
// the project builds for), or a copy of a part at an odd address, which
// no file the safetensors writers make has (they align the data to 8
// bytes and every 16-bit tensor is a whole number of elements).
func (s *Stored) halves() [][]uint16 {
	out := make([][]uint16, len(s.Parts))
	for i, p := range s.Parts {
		out[i] = halvesOf(p.Data)
	}
	return out
}

// WidenRows writes rows [r0, r1) of s as float32 into dst ((r1-r0)·Cols),
// exactly (kernels.Widen, in vector registers). A fault reading the
// mapping (the file truncated under it) is an error naming the file
// (ReadMapped).
func (s *Stored) WidenRows(dst []float32, r0, r1 int) error {
	h := s.half()
	return s.eachRun(r0, r1, func(data []byte, file string, at int) error {
		return ReadMapped(s.Name, file, func() { kernels.Widen(h, dst[at*s.Cols:], halvesOf(data)) })
	})
}

// halvesOf is data's little-endian 16-bit elements: data itself, or a
// copy when it lies at an odd address (see halves).
func halvesOf(data []byte) []uint16 {
	if len(data) == 0 {
		return nil
	}
	if uintptr(unsafe.Pointer(&data[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&data[0])), len(data)/2)
	}
	out := make([]uint16, len(data)/2)
	for j := range out {
		out[j] = binary.LittleEndian.Uint16(data[2*j:])
	}
	return out
}

// Widen is s in float32, a copy: for the Gorgonia path and the analyses
// that read a weight whole.
func (s *Stored) Widen() ([]float32, error) {
	dst := make([]float32, s.Rows*s.Cols)
	return dst, s.WidenRows(dst, 0, s.Rows)
}

// eachRun calls f for each stretch of rows [r0, r1) that lies in one part,
// with its bytes, its file and the index of its first row counted from r0.
func (s *Stored) eachRun(r0, r1 int, f func(data []byte, file string, at int) error) error {
	row, rowBytes := 0, s.Cols*s.elemSize()
	for _, p := range s.Parts {
		lo, hi := max(r0, row), min(r1, row+p.Rows)
		if lo < hi {
			if err := f(p.Data[(lo-row)*rowBytes:(hi-row)*rowBytes], p.File, lo-r0); err != nil {
				return err
			}
		}
		row += p.Rows
	}
	return nil
}

// FirstNonFinite finds the first NaN or infinity of s, by its row and
// column (-1, -1 when there is none), in one pass over its bytes that
// looks at the exponent bits alone, four 16-bit elements at a time: the
// load-time check of a mapped model, which reads the file once.
func (s *Stored) FirstNonFinite() (row, col int, err error) {
	row, col = -1, -1
	err = s.eachRun(0, s.Rows, func(data []byte, file string, at int) error {
		i := -1
		if err := ReadMapped(s.Name, file, func() { i = firstNonFinite(data, s.DType) }); err != nil {
			return err
		}
		if i >= 0 && row < 0 {
			row, col = at+i/s.Cols, i%s.Cols
		}
		return nil
	})
	return row, col, err
}

// exponentMask is the exponent bits of an element of dtype: all ones is an
// infinity or a NaN.
var exponentMask = map[string]uint64{safetensors.BF16: 0x7f80, safetensors.F16: 0x7c00}

// firstNonFinite is the index of the first element of data (little-endian
// elements of dtype) whose exponent bits are all ones, or -1. It tests 32
// bytes a step (an 8B model's 15 GB in 1.8 s on one core at 8 bytes a
// step, 1.0 s at 32) and finds the element in the step that has one.
func firstNonFinite(data []byte, dtype string) int {
	mask := exponentMask[dtype]
	lanes := mask * 0x0001000100010001
	// hit is non-zero when a lane of word has its exponent bits all ones:
	// each lane of v is zero there, no lane of v has its top bit set, so
	// the borrow trick finds a zero lane exactly.
	hit := func(word uint64) uint64 {
		v := word&lanes ^ lanes
		return (v - 0x0001000100010001) &^ v & 0x8000800080008000
	}
	i := 0
	for ; i+32 <= len(data); i += 32 {
		b := data[i : i+32 : i+32]
		if hit(binary.LittleEndian.Uint64(b))|hit(binary.LittleEndian.Uint64(b[8:]))|
			hit(binary.LittleEndian.Uint64(b[16:]))|hit(binary.LittleEndian.Uint64(b[24:])) != 0 {
			break
		}
	}
	for ; i+2 <= len(data); i += 2 {
		if uint64(binary.LittleEndian.Uint16(data[i:]))&mask == mask {
			return i / 2
		}
	}
	return -1
}

// ReadMapped runs read, which reads memory mapped from file for weight
// name, with a fault (SIGBUS: the file truncated while mapped) turned into
// a one-line error instead of the end of the process.
// debug.SetPanicOnFault holds for the calling goroutine only: the kernels'
// parallel loops hand a fault on one of their helpers back to the caller
// (internal/kernels), and read must start no other goroutine that reads
// the mapping.
func ReadMapped(name, file string, read func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		r := recover()
		if r == nil {
			return
		}
		if _, fault := r.(interface{ Addr() uintptr }); !fault {
			panic(r)
		}
		err = errors.Errorf("weight %s: reading it from %s faulted: the file was truncated or replaced while the model had it mapped; open the model again", name, file)
	}()
	read()
	return nil
}

// identity names s for an op's String: Gorgonia merges nodes whose op
// strings and inputs are equal, and two weights of one shape (SwiGLU's gate
// and up) read the same input; a model's parameter names are unique.
func (s *Stored) identity() string {
	return fmt.Sprintf("%s %s (%d,%d)", s.Name, s.DType, s.Rows, s.Cols)
}
