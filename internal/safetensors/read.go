package safetensors

import (
	"io"
	"math"
	"os"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
)

// MaxFileLen is the largest file ReadFile accepts (16 GiB): comfortably more
// than anything this project writes, small enough that a wrong path is
// refused before it exhausts memory.
const MaxFileLen = 16 << 30

// ReadFile reads and validates the safetensors file at path; errors name the
// file. It is ReadFileLimit with MaxFileLen.
func ReadFile(path string) ([]Tensor, map[string]string, error) {
	tensors, metadata, err := ReadFileLimit(path, MaxFileLen)
	if err != nil {
		return nil, nil, errors.Wrapf(unwrapPath(err), "safetensors file %s", path)
	}
	return tensors, metadata, nil
}

// unwrapPath drops the *os.PathError around err so a message names the path
// once; errors.Is(err, fs.ErrNotExist) still holds.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return errors.WithMessage(pe.Err, pe.Op)
	}
	return err
}

// ReadFileLimit reads and validates the safetensors file at path, refusing a
// file of more than limit bytes, with the checks and messages of Read. A path
// that is not a regular file (a pipe, a device such as /dev/zero) is refused
// before anything is read (safefile.OpenRegular). It never reads more than
// the file's header describes plus one byte, so a file that grows while it is
// read cannot keep it reading: it reads the 8-byte header length, checks it,
// reads the header, checks the tensors it lists against the file's size,
// reads exactly the data they cover and then makes sure nothing follows.
//
// Errors do not name the file. One from the file system (open, stat, read)
// is returned as os gave it, an *os.PathError, for the caller to word.
func ReadFileLimit(path string, limit int64) ([]Tensor, map[string]string, error) {
	return ReadFileChecked(path, limit, nil)
}

// ReadFileChecked is ReadFileLimit with a check of the header: once the
// header is read and its layout validated, check (if not nil) sees the
// tensors it lists, with nil Data, and the metadata; an error from check is
// returned before any tensor data is read, so a file that does not hold what
// the caller expects costs no more than its header. (The digest is checked
// later, once the data is read.)
func ReadFileChecked(path string, limit int64, check func(header []Tensor, metadata map[string]string) error) ([]Tensor, map[string]string, error) {
	f, err := safefile.OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := int64(-1)
	if info.Mode().IsRegular() {
		size = info.Size()
	}
	return readFrom(f, size, limit, check)
}

// readFrom reads one safetensors file from r (see ReadFileLimit). size is
// the file's length when known (a regular file), or -1.
func readFrom(r io.Reader, size, limit int64, check func([]Tensor, map[string]string) error) ([]Tensor, map[string]string, error) {
	h, err := readHeader(r, size, limit, Bounds{})
	if err != nil {
		return nil, nil, err
	}
	if check != nil {
		if err := check(tensorsIn(h.tensors, nil), h.metadata); err != nil {
			return nil, nil, err
		}
	}
	section, err := readUpTo(r, h.end, size >= 8)
	if err != nil {
		return nil, nil, err
	}
	if got := int64(len(section)); got < h.end {
		// Checked against the bytes that did arrive, the header names the
		// first tensor cut short, as Read does.
		if _, err := layout(h.raw, got, Bounds{}); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.Errorf("data section ends after %d of %d bytes (truncated file?)", got, h.end)
	}
	var extra [1]byte
	if got, err := io.ReadFull(r, extra[:]); got > 0 {
		return nil, nil, errors.Errorf("data bytes from %d on at the end of the file are covered by no tensor", h.end)
	} else if err != io.EOF {
		return nil, nil, err
	}
	if err := checkDigest(h.digest, section); err != nil {
		return nil, nil, err
	}
	return tensorsIn(h.tensors, section), h.metadata, nil
}

// fileHeader is a file's header as readHeader read and checked it.
type fileHeader struct {
	parsed
	raw []byte // the JSON header, padding included
}

// dataStart is the offset in the file of the data section.
func (h fileHeader) dataStart() int64 { return 8 + int64(len(h.raw)) }

// readHeader reads the length prefix and the header from r and checks them,
// and the data section they describe, against the file's size (-1 when not
// known), limit and bounds; it reads no tensor data.
func readHeader(r io.Reader, size, limit int64, bounds Bounds) (fileHeader, error) {
	if size > limit {
		return fileHeader{}, errors.Errorf("file is %d bytes, larger than the %d-byte limit", size, limit)
	}
	var prefix [8]byte
	if got, err := io.ReadFull(r, prefix[:]); err == io.EOF || err == io.ErrUnexpectedEOF {
		return fileHeader{}, errors.Errorf("file is %d bytes, too short for the 8-byte header length", got)
	} else if err != nil {
		return fileHeader{}, err
	}
	// A regular file can report a size too small for what it holds (files
	// in /proc report 0); such a size tells nothing.
	known := size >= 8
	avail := int64(-1)
	if known {
		avail = size - 8
	}
	n, err := headerLength(prefix[:], avail)
	if err != nil {
		return fileHeader{}, err
	}
	if n > limit-8 {
		return fileHeader{}, errors.Errorf("header length %d exceeds the %d-byte file limit", n, limit)
	}
	header, err := readUpTo(r, n, known)
	if err != nil {
		return fileHeader{}, err
	}
	if int64(len(header)) < n {
		return fileHeader{}, errors.Errorf("header length %d exceeds the %d bytes after the length prefix (truncated file?)", n, len(header))
	}
	sectionLen := int64(math.MaxInt64)
	if known {
		sectionLen = size - 8 - n
	}
	p, err := layout(header, sectionLen, bounds)
	if err != nil {
		return fileHeader{}, err
	}
	if known && p.end != sectionLen {
		return fileHeader{}, errors.Errorf("data bytes [%d, %d) at the end of the file are covered by no tensor", p.end, sectionLen)
	}
	if p.end > limit-8-n {
		return fileHeader{}, errors.Errorf("the header describes %d bytes of tensor data, which with the header exceeds the %d-byte file limit", p.end, limit)
	}
	return fileHeader{parsed: p, raw: header}, nil
}

// readUpTo reads n bytes from r, fewer only if r ends first. When n is known
// to be there (checked against a regular file's size) the buffer is made
// whole at once; otherwise it grows with what arrives, so a length that lies
// costs no more memory than the bytes actually sent.
func readUpTo(r io.Reader, n int64, known bool) ([]byte, error) {
	if !known {
		return io.ReadAll(io.LimitReader(r, n))
	}
	buf := make([]byte, n)
	got, err := io.ReadFull(r, buf)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		err = nil
	}
	return buf[:got], err
}

// Read parses and validates a whole safetensors file held in data, and
// checks the data against its digest when the file records one. The
// returned tensors are in data order and their Data slices alias data; the
// metadata map, without DigestKey, is never nil. Errors are one line naming the tensor (or header
// field) and the problem, without a file name (ReadFile adds it).
func Read(data []byte) ([]Tensor, map[string]string, error) {
	if len(data) < 8 {
		return nil, nil, errors.Errorf("file is %d bytes, too short for the 8-byte header length", len(data))
	}
	n, err := headerLength(data[:8], int64(len(data)-8))
	if err != nil {
		return nil, nil, err
	}
	header, section := data[8:8+n], data[8+n:]
	p, err := layout(header, int64(len(section)), Bounds{})
	if err != nil {
		return nil, nil, err
	}
	if p.end != int64(len(section)) {
		return nil, nil, errors.Errorf("data bytes [%d, %d) at the end of the file are covered by no tensor", p.end, len(section))
	}
	if err := checkDigest(p.digest, section); err != nil {
		return nil, nil, err
	}
	return tensorsIn(p.tensors, section), p.metadata, nil
}
