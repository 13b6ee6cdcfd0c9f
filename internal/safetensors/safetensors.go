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
	entries := make([]headerEntry, len(tensors))
	for i, t := range tensors {
		entries[i] = headerEntry{Name: t.Name, DType: t.DType, Shape: t.Shape, Len: int64(len(t.Data))}
	}
	header, err := encodeHeader(entries, metadata)
	if err != nil {
		return err
	}
	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(len(header)))
	if _, err := w.Write(prefix[:]); err != nil {
		return errors.Wrap(err, "safetensors: writing header length")
	}
	if _, err := w.Write(header); err != nil {
		return errors.Wrap(err, "safetensors: writing header")
	}
	for _, t := range tensors {
		if _, err := w.Write(t.Data); err != nil {
			return errors.Wrapf(err, "safetensors: writing tensor %q", t.Name)
		}
	}
	return nil
}

// headerEntry is a tensor as the header lists it: Len is the byte length
// of its data, which must be its shape's.
type headerEntry struct {
	Name  string
	DType string
	Shape []int
	Len   int64
}

// encodeHeader validates tensors and metadata and returns the padded header.
func encodeHeader(tensors []headerEntry, metadata map[string]string) ([]byte, error) {
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
		shape := make([]int64, len(t.Shape))
		for j, d := range t.Shape {
			shape[j] = int64(d)
		}
		n, err := byteSize(t.DType, shape)
		if err != nil {
			return nil, errors.Wrapf(err, "safetensors: tensor %q", t.Name)
		}
		if t.Len != n {
			return nil, errors.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, Data has %d",
				t.Name, t.Shape, t.DType, n, t.Len)
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
