package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"strings"

	"github.com/pkg/errors"
)

// Stream is a tensor whose bytes WriteSealed draws a chunk at a time rather
// than holding them whole: Encode fills dst with the tensor's data from
// byte offset off on (dst's length is a multiple of the dtype's size). An
// Encode error (a value the caller refuses, such as NaN) stops the write and
// is returned as it is: it names the tensor itself.
type Stream struct {
	Name   string
	DType  string
	Shape  []int
	Encode func(dst []byte, off int) error
}

// WriterAt is a file being written in order that can also patch bytes it
// already wrote.
type WriterAt interface {
	io.Writer
	io.WriterAt
}

// streamChunk is how many bytes of a tensor WriteSealed encodes, hashes and
// writes at a time.
const streamChunk = 1 << 20

// WriteSealed writes sources and metadata as Write does, the same bytes,
// in one pass over the data: the header goes first with a placeholder
// digest, then each chunk is encoded, hashed and written, and the digest
// (DigestKey) is written over the placeholder at the end. Memory is one
// chunk, not the data section. On error the file is incomplete: w should be
// a temporary file (safefile.WriteFileAtomicAt).
func WriteSealed(w WriterAt, sources []Stream, metadata map[string]string) error {
	if _, ok := metadata[DigestKey]; ok {
		return errors.Errorf("safetensors: metadata key %q is reserved: WriteSealed records the SHA-256 of the tensor data there", DigestKey)
	}
	placeholder := strings.Repeat("0", 2*sha256.Size)
	withPlaceholder := make(map[string]string, len(metadata)+1)
	for k, v := range metadata {
		withPlaceholder[k] = v
	}
	withPlaceholder[DigestKey] = placeholder
	entries, err := streamEntries(sources)
	if err != nil {
		return err
	}
	header, err := encodeHeader(entries, withPlaceholder)
	if err != nil {
		return err
	}
	// The metadata object comes first in the header and its values are
	// JSON-quoted, so the first "data_sha256":"0...0" is the entry itself.
	at := bytes.Index(header, []byte(quote(DigestKey)+":"+quote(placeholder)))
	if at < 0 {
		return errors.New("safetensors: the header lost its digest entry")
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(append(prefix[:], header...)); err != nil {
		return errors.Wrap(err, "safetensors: writing header")
	}
	h := sha256.New()
	if err := writeStreams(w, h, sources, entries); err != nil {
		return err
	}
	digestAt := int64(len(prefix) + at + len(quote(DigestKey)+":") + 1) // past the opening quote
	if _, err := w.WriteAt([]byte(hex.EncodeToString(h.Sum(nil))), digestAt); err != nil {
		return errors.Wrap(err, "safetensors: writing the data digest")
	}
	return nil
}

// streamEntries lists sources as the header does, each with its shape's
// byte length.
func streamEntries(sources []Stream) ([]headerEntry, error) {
	entries := make([]headerEntry, len(sources))
	for i, s := range sources {
		shape := make([]int64, len(s.Shape))
		for j, d := range s.Shape {
			shape[j] = int64(d)
		}
		n, err := byteSize(s.DType, shape)
		if err != nil {
			return nil, errors.Wrapf(err, "safetensors: tensor %q", s.Name)
		}
		entries[i] = headerEntry{Name: s.Name, DType: s.DType, Shape: s.Shape, Len: n}
	}
	return entries, nil
}

// writeStreams encodes each source a chunk at a time into one buffer,
// hashing and writing each chunk.
func writeStreams(w io.Writer, h io.Writer, sources []Stream, entries []headerEntry) error {
	buf := make([]byte, streamChunk)
	for i, s := range sources {
		size := dtypeSizes[s.DType]
		step := streamChunk - streamChunk%size
		for off := int64(0); off < entries[i].Len; off += int64(step) {
			chunk := buf[:min(int64(step), entries[i].Len-off)]
			if err := s.Encode(chunk, int(off)); err != nil {
				return err
			}
			h.Write(chunk)
			if _, err := w.Write(chunk); err != nil {
				return errors.Wrapf(err, "safetensors: writing tensor %q", s.Name)
			}
		}
	}
	return nil
}

// Float32Encoder encodes v as F32 a chunk at a time; check, if not nil,
// sees each chunk's values first and may refuse them (off is the index of
// the chunk's first value).
func Float32Encoder(v []float32, check func(values []float32, off int) error) func(dst []byte, off int) error {
	return func(dst []byte, off int) error {
		values := v[off/4 : off/4+len(dst)/4]
		if check != nil {
			if err := check(values, off/4); err != nil {
				return err
			}
		}
		for i, x := range values {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
		}
		return nil
	}
}

// Float64Encoder encodes v as F64 a chunk at a time; check as for
// Float32Encoder.
func Float64Encoder(v []float64, check func(values []float64, off int) error) func(dst []byte, off int) error {
	return func(dst []byte, off int) error {
		values := v[off/8 : off/8+len(dst)/8]
		if check != nil {
			if err := check(values, off/8); err != nil {
				return err
			}
		}
		for i, x := range values {
			binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(x))
		}
		return nil
	}
}
