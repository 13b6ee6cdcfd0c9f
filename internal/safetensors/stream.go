package safetensors

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"unsafe"

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
	tensors := make([]Tensor, len(sources))
	for i, s := range sources {
		tensors[i] = Tensor{Name: s.Name, DType: s.DType, Shape: s.Shape}
	}
	header, err := encodeHeader(tensors, withPlaceholder, false)
	if err != nil {
		return err
	}
	// The metadata object comes first in the header and its values are
	// JSON-quoted, so the first "data_sha256":"0...0" is the entry itself.
	at := bytes.Index(header, []byte(quote(DigestKey)+":"+quote(placeholder)))
	if at < 0 {
		return errors.New("safetensors: the header lost its digest entry")
	}
	if err := writeHeader(w, header); err != nil {
		return err
	}
	h := sha256.New()
	if err := writeStreams(w, h, sources, tensors); err != nil {
		return err
	}
	digestAt := int64(8 + at + len(quote(DigestKey)+":") + 1) // past the length prefix and the opening quote
	if _, err := w.WriteAt([]byte(hex.EncodeToString(h.Sum(nil))), digestAt); err != nil {
		return errors.Wrap(err, "safetensors: writing the data digest")
	}
	return nil
}

// writeStreams encodes and hashes each stream a chunk at a time while the
// chunk before it is being written (chunkWriter), so that the write runs at
// the slower of the disk's rate and SHA-256's, not at their sum.
func writeStreams(w io.Writer, h hash.Hash, streams []Stream, tensors []Tensor) error {
	out := newChunkWriter(w)
	for i, s := range streams {
		size := dtypeSizes[s.DType]
		step := streamChunk - streamChunk%size
		n, _ := TensorBytes(tensors[i]) // encodeHeader checked every shape
		for off := int64(0); off < n; off += int64(step) {
			buf, err := out.free()
			if err != nil {
				return errors.Wrapf(err, "safetensors: writing tensor %q", s.Name)
			}
			chunk := buf[:min(int64(step), n-off)]
			if err := s.Encode(chunk, int(off)); err != nil {
				_ = out.close() // the encoder's refusal is the error to report
				return err
			}
			h.Write(chunk)
			out.write(chunk)
		}
	}
	return errors.Wrap(out.close(), "safetensors: writing tensor data")
}

// chunkWriter writes chunks on a goroutine of its own, in order, from a
// few buffers it hands back as each is written.
type chunkWriter struct {
	buffers chan []byte
	queue   chan []byte
	done    chan struct{}
	failed  atomic.Bool
	err     error // the first write error; read after done
}

// chunkBuffers is how many chunks are in flight: one being filled, one
// being written, one waiting.
const chunkBuffers = 3

func newChunkWriter(w io.Writer) *chunkWriter {
	c := &chunkWriter{buffers: make(chan []byte, chunkBuffers), queue: make(chan []byte, chunkBuffers), done: make(chan struct{})}
	for range chunkBuffers {
		c.buffers <- make([]byte, streamChunk)
	}
	go func() {
		defer close(c.done)
		for chunk := range c.queue {
			if c.err == nil {
				if _, err := w.Write(chunk); err != nil {
					c.err = err
					c.failed.Store(true)
				}
			}
			c.buffers <- chunk[:cap(chunk)]
		}
	}()
	return c
}

// free returns a buffer to fill, once one is written; an error once a
// write failed.
func (c *chunkWriter) free() ([]byte, error) {
	if c.failed.Load() {
		return nil, c.close()
	}
	return <-c.buffers, nil
}

// write queues chunk, a buffer from free.
func (c *chunkWriter) write(chunk []byte) { c.queue <- chunk }

// close waits for the queued chunks and returns the first write error.
func (c *chunkWriter) close() error {
	close(c.queue)
	<-c.done
	return c.err
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
		if nativeLittleEndian {
			copy(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(dst)))
			return nil
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
		if nativeLittleEndian {
			copy(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(dst)))
			return nil
		}
		for i, x := range values {
			binary.LittleEndian.PutUint64(dst[8*i:], math.Float64bits(x))
		}
		return nil
	}
}

// nativeLittleEndian says the machine stores numbers as safetensors does, so a
// chunk is its values' memory copied (no per-value conversion).
var nativeLittleEndian = func() bool {
	one := uint16(1)
	return *(*byte)(unsafe.Pointer(&one)) == 1
}()
