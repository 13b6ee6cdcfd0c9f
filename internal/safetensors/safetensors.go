package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/pkg/errors"
)

// Tensor is one named tensor: row-major little-endian Data of the given DType
// and Shape. An empty Shape is a scalar (one element).
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// The dtypes this package knows, with their element sizes in bytes, as
// spelled by the reference implementation.
var dtypeSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// The float dtypes: float32, float64, IEEE 754 half precision and bfloat16
// (the upper 16 bits of a float32).
const (
	F32  = "F32"
	F64  = "F64"
	F16  = "F16"
	BF16 = "BF16"
)

// MaxHeaderLen is the largest JSON header Read accepts (the reference
// implementation's limit); anything longer is taken as a corrupt length.
const MaxHeaderLen = 100_000_000

const metadataKey = "__metadata__"

// DTypeSize returns the size in bytes of one element of dtype.
func DTypeSize(dtype string) (int, error) {
	size, ok := dtypeSizes[dtype]
	if !ok {
		return 0, errors.Errorf("unknown dtype %q", dtype)
	}
	return size, nil
}

// byteSize returns product(shape) * size of dtype, or an error naming a
// negative dimension or an overflow.
func byteSize(dtype string, shape []int64) (int64, error) {
	size, err := DTypeSize(dtype)
	if err != nil {
		return 0, err
	}
	n := int64(size)
	for _, d := range shape {
		if d < 0 {
			return 0, errors.Errorf("shape %v has a negative dimension", shape)
		}
		if d != 0 && n > math.MaxInt64/d {
			return 0, errors.Errorf("shape %v of %s overflows a 64-bit byte count", shape, dtype)
		}
		n *= d
	}
	return n, nil
}

// Write writes tensors and metadata as one safetensors file (see the package
// comment for the exact layout), adding to the metadata the SHA-256 of the
// tensor data under DigestKey, which metadata must not hold. It checks every
// tensor first, so nothing is written for invalid input.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	metadata, err := withDigest(tensors, metadata)
	if err != nil {
		return err
	}
	header, err := encodeHeader(tensors, metadata, true)
	if err != nil {
		return err
	}
	if err := writeHeader(w, header); err != nil {
		return err
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return errors.Wrapf(err, "safetensors: writing tensor %q", t.Name)
		}
	}
	return nil
}

// WriteStreamed writes a file too large to hold in memory (a Hugging Face
// shard of gigabytes): the header of tensors' names, dtypes and shapes
// (their Data unused) and metadata, as Write lays it out but without the
// digest, then each tensor's data in order as fill writes it, which must
// be exactly the tensor's bytes.
func WriteStreamed(w io.Writer, tensors []Tensor, metadata map[string]string, fill func(t Tensor, w io.Writer) error) error {
	header, err := encodeHeader(tensors, metadata, false)
	if err != nil {
		return err
	}
	if err := writeHeader(w, header); err != nil {
		return err
	}
	for _, t := range tensors {
		want, _ := TensorBytes(t) // encodeHeader checked every shape
		cw := &countingWriter{w: w}
		if err := fill(t, cw); err != nil {
			return errors.Wrapf(err, "safetensors: writing tensor %q", t.Name)
		}
		if cw.n != want {
			return errors.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, %d were written", t.Name, t.Shape, t.DType, want, cw.n)
		}
	}
	return nil
}

// StreamedHeader is what WriteStreamed writes before the first tensor's
// data (the length prefix and the padded header): a caller knows a file's
// size before writing it, and can recognise one written already.
func StreamedHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	header, err := encodeHeader(tensors, metadata, false)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeHeader(&b, header); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// TensorBytes is the size of t's data as its dtype and shape give it.
func TensorBytes(t Tensor) (int64, error) {
	shape := make([]int64, len(t.Shape))
	for j, d := range t.Shape {
		shape[j] = int64(d)
	}
	return byteSize(t.DType, shape)
}

// countingWriter counts what passes through it to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeHeader writes the header's length, then the header.
func writeHeader(w io.Writer, header []byte) error {
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return errors.Wrap(err, "safetensors: writing header length")
	}
	_, err := w.Write(header)
	return errors.Wrap(err, "safetensors: writing header")
}

// encodeHeader validates tensors and metadata and returns the padded
// header; withData also checks each tensor's Data holds its bytes.
func encodeHeader(tensors []Tensor, metadata map[string]string, withData bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, errors.Errorf("safetensors: metadata %q: key and value must be valid UTF-8", k)
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString(quote(metadataKey) + ":{")
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(quote(k) + ":" + quote(metadata[k]))
		}
		b.WriteByte('}')
	}
	seen := make(map[string]bool, len(tensors))
	var offset int64
	for i, t := range tensors {
		switch {
		case t.Name == metadataKey:
			return nil, errors.Errorf("safetensors: tensor name %q is reserved", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, errors.Errorf("safetensors: tensor name %q is not valid UTF-8", t.Name)
		case seen[t.Name]:
			return nil, errors.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		n, err := TensorBytes(t)
		if err != nil {
			return nil, errors.Wrapf(err, "safetensors: tensor %q", t.Name)
		}
		if withData && int64(len(t.Data)) != n {
			return nil, errors.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, Data has %d",
				t.Name, t.Shape, t.DType, n, len(t.Data))
		}
		if i > 0 || len(metadata) > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `%s:{"dtype":%s,"shape":[`, quote(t.Name), quote(t.DType))
		for j, d := range t.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&b, `],"data_offsets":[%d,%d]}`, offset, offset+n)
		offset += n
	}
	b.WriteByte('}')
	for b.Len()%8 != 0 {
		b.WriteByte(' ')
	}
	return b.Bytes(), nil
}

// quote returns s as a JSON string, without HTML escaping so that names read
// the same in the file as in Go.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// A string always encodes; the error is impossible.
	_ = enc.Encode(s)
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// EncodeFloat32 returns v as little-endian F32 bytes.
func EncodeFloat32(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// EncodeFloat64 returns v as little-endian F64 bytes.
func EncodeFloat64(v []float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// DecodeFloat32 converts little-endian F32 bytes to float32s, bit for bit.
func DecodeFloat32(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, errors.Errorf("%d bytes is not a whole number of F32 values", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// DecodeFloat64 converts little-endian F64 bytes to float64s, bit for bit.
func DecodeFloat64(b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return nil, errors.Errorf("%d bytes is not a whole number of F64 values", len(b))
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}
