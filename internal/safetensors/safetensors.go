package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
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

// F32 and F64 are the dtypes of float32 and float64 tensors.
const (
	F32 = "F32"
	F64 = "F64"
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
// comment for the exact layout). It checks every tensor first, so nothing is
// written for invalid input.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	header, err := encodeHeader(tensors, metadata)
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

// encodeHeader validates tensors and metadata and returns the padded header.
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
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
		if int64(len(t.Data)) != n {
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
// the caller expects costs no more than its header.
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
	if size > limit {
		return nil, nil, errors.Errorf("file is %d bytes, larger than the %d-byte limit", size, limit)
	}
	var prefix [8]byte
	if got, err := io.ReadFull(r, prefix[:]); err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, nil, errors.Errorf("file is %d bytes, too short for the 8-byte header length", got)
	} else if err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	if n > limit-8 {
		return nil, nil, errors.Errorf("header length %d exceeds the %d-byte file limit", n, limit)
	}
	header, err := readUpTo(r, n, known)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(header)) < n {
		return nil, nil, errors.Errorf("header length %d exceeds the %d bytes after the length prefix (truncated file?)", n, len(header))
	}
	sectionLen := int64(math.MaxInt64)
	if known {
		sectionLen = size - 8 - n
	}
	entries, metadata, end, err := layout(header, sectionLen)
	if err != nil {
		return nil, nil, err
	}
	if known && end != sectionLen {
		return nil, nil, errors.Errorf("data bytes [%d, %d) at the end of the file are covered by no tensor", end, sectionLen)
	}
	if end > limit-8-n {
		return nil, nil, errors.Errorf("the header describes %d bytes of tensor data, which with the header exceeds the %d-byte file limit", end, limit)
	}
	if check != nil {
		if err := check(tensorsIn(entries, nil), metadata); err != nil {
			return nil, nil, err
		}
	}
	section, err := readUpTo(r, end, known)
	if err != nil {
		return nil, nil, err
	}
	if got := int64(len(section)); got < end {
		// Checked against the bytes that did arrive, the header names the
		// first tensor cut short, as Read does.
		if _, _, _, err := layout(header, got); err != nil {
			return nil, nil, err
		}
		return nil, nil, errors.Errorf("data section ends after %d of %d bytes (truncated file?)", got, end)
	}
	var extra [1]byte
	if got, err := io.ReadFull(r, extra[:]); got > 0 {
		return nil, nil, errors.Errorf("data bytes from %d on at the end of the file are covered by no tensor", end)
	} else if err != io.EOF {
		return nil, nil, err
	}
	return tensorsIn(entries, section), metadata, nil
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

// Read parses and validates a whole safetensors file held in data. The
// returned tensors are in data order and their Data slices alias data; the
// metadata map is never nil. Errors are one line naming the tensor (or header
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
	entries, metadata, end, err := layout(header, int64(len(section)))
	if err != nil {
		return nil, nil, err
	}
	if end != int64(len(section)) {
		return nil, nil, errors.Errorf("data bytes [%d, %d) at the end of the file are covered by no tensor", end, len(section))
	}
	return tensorsIn(entries, section), metadata, nil
}

// headerLength decodes the 8-byte header length and checks it against
// MaxHeaderLen and, unless avail is negative, against the avail bytes that
// follow it.
func headerLength(prefix []byte, avail int64) (int64, error) {
	n := binary.LittleEndian.Uint64(prefix)
	if n > MaxHeaderLen {
		return 0, errors.Errorf("header length %d exceeds the %d-byte limit (corrupt or not a safetensors file)", n, MaxHeaderLen)
	}
	if avail >= 0 && n > uint64(avail) {
		return 0, errors.Errorf("header length %d exceeds the %d bytes after the length prefix (truncated file?)", n, avail)
	}
	return int64(n), nil
}

// layout parses header and checks that its tensors, each within the
// sectionLen-byte data section, tile the start of it without overlap or
// gap. It returns them in data order, with the metadata and the end of the
// last one.
func layout(header []byte, sectionLen int64) ([]entry, map[string]string, int64, error) {
	entries, metadata, err := parseHeader(header, sectionLen)
	if err != nil {
		return nil, nil, 0, err
	}
	sort.SliceStable(entries, func(i, j int) bool {
		if entries[i].begin != entries[j].begin {
			return entries[i].begin < entries[j].begin
		}
		return entries[i].end < entries[j].end
	})
	var pos int64
	for i, e := range entries {
		if e.begin < pos {
			p := entries[i-1]
			return nil, nil, 0, errors.Errorf("tensor %q: data_offsets [%d %d] overlap tensor %q [%d %d]",
				e.name, e.begin, e.end, p.name, p.begin, p.end)
		}
		if e.begin > pos {
			return nil, nil, 0, errors.Errorf("tensor %q: data_offsets [%d %d] leave data bytes [%d, %d) covered by no tensor",
				e.name, e.begin, e.end, pos, e.begin)
		}
		pos = e.end
	}
	return entries, metadata, pos, nil
}

// tensorsIn returns the tensors of entries (from layout) over section; a nil
// section (the header alone) gives tensors with nil Data.
func tensorsIn(entries []entry, section []byte) []Tensor {
	tensors := make([]Tensor, len(entries))
	for i, e := range entries {
		shape := make([]int, len(e.shape))
		for j, d := range e.shape {
			shape[j] = int(d)
		}
		tensors[i] = Tensor{Name: e.name, DType: e.dtype, Shape: shape}
		if section != nil {
			tensors[i].Data = section[e.begin:e.end:e.end]
		}
	}
	return tensors
}

// entry is one tensor's header record, checked against itself and the size
// of the data section but not yet against the other tensors.
type entry struct {
	name       string
	dtype      string
	shape      []int64
	begin, end int64
}

func parseHeader(header []byte, sectionLen int64) ([]entry, map[string]string, error) {
	if !utf8.Valid(header) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, nil, errors.Errorf("header does not start with '{' (not a safetensors file?)")
	}
	members, err := objectMembers(header, "tensor name")
	if err != nil {
		return nil, nil, errors.Wrap(err, "header")
	}
	metadata := map[string]string{}
	var entries []entry
	for _, m := range members {
		if m.key == metadataKey {
			if metadata, err = parseMetadata(m.value); err != nil {
				return nil, nil, err
			}
			continue
		}
		e, err := parseEntry(m.key, m.value, sectionLen)
		if err != nil {
			return nil, nil, errors.Wrapf(err, "tensor %q", m.key)
		}
		entries = append(entries, e)
	}
	return entries, metadata, nil
}

func parseMetadata(raw json.RawMessage) (map[string]string, error) {
	members, err := objectMembers(raw, "key")
	if err != nil {
		return nil, errors.Wrap(err, metadataKey)
	}
	metadata := make(map[string]string, len(members))
	for _, m := range members {
		if len(m.value) == 0 || m.value[0] != '"' {
			return nil, errors.Errorf("%s %q: value %s is not a string", metadataKey, m.key, abbreviate(m.value))
		}
		var s string
		if err := json.Unmarshal(m.value, &s); err != nil {
			return nil, errors.Wrapf(err, "%s %q", metadataKey, m.key)
		}
		metadata[m.key] = s
	}
	return metadata, nil
}

func parseEntry(name string, raw json.RawMessage, sectionLen int64) (entry, error) {
	members, err := objectMembers(raw, "field")
	if err != nil {
		return entry{}, err
	}
	e := entry{name: name}
	var haveDType, haveShape, haveOffsets bool
	for _, m := range members {
		switch m.key {
		case "dtype":
			if len(m.value) == 0 || m.value[0] != '"' {
				return entry{}, errors.Errorf("dtype %s is not a string", abbreviate(m.value))
			}
			if err := json.Unmarshal(m.value, &e.dtype); err != nil {
				return entry{}, errors.Wrap(err, "dtype")
			}
			haveDType = true
		case "shape":
			if e.shape, err = intArray(m.value); err != nil {
				return entry{}, errors.Wrap(err, "shape")
			}
			haveShape = true
		case "data_offsets":
			offsets, err := intArray(m.value)
			if err != nil {
				return entry{}, errors.Wrap(err, "data_offsets")
			}
			if len(offsets) != 2 {
				return entry{}, errors.Errorf("data_offsets %v: want [begin, end]", offsets)
			}
			e.begin, e.end = offsets[0], offsets[1]
			haveOffsets = true
		default:
			return entry{}, errors.Errorf("unknown field %q", m.key)
		}
	}
	switch {
	case !haveDType:
		return entry{}, errors.New("no dtype")
	case !haveShape:
		return entry{}, errors.New("no shape")
	case !haveOffsets:
		return entry{}, errors.New("no data_offsets")
	}
	size, err := byteSize(e.dtype, e.shape)
	if err != nil {
		return entry{}, err
	}
	if e.begin < 0 || e.end < e.begin {
		return entry{}, errors.Errorf("data_offsets [%d %d] are not a range", e.begin, e.end)
	}
	if e.end > sectionLen {
		return entry{}, errors.Errorf("data_offsets [%d %d] run past the end of the %d-byte data section (truncated file?)",
			e.begin, e.end, sectionLen)
	}
	if e.end-e.begin != size {
		return entry{}, errors.Errorf("shape %v of %s needs %d bytes, data_offsets [%d %d] hold %d",
			e.shape, e.dtype, size, e.begin, e.end, e.end-e.begin)
	}
	return e, nil
}

// member is one key/value pair of a JSON object, in file order.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers parses raw as exactly one JSON object (trailing whitespace
// allowed) and returns its members, rejecting duplicate keys, which
// encoding/json would silently resolve to the last one. keyKind names the keys
// in messages ("duplicate tensor name").
func objectMembers(raw []byte, keyKind string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if tok != json.Delim('{') {
		return nil, errors.Errorf("%s is not a JSON object", abbreviate(raw))
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.Errorf("object key %v is not a string", tok)
		}
		if seen[key] {
			return nil, errors.Errorf("duplicate %s %q", keyKind, key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, errors.Wrapf(syntaxError(err), "value of %q", key)
		}
		members = append(members, member{key, value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the end of the object")
	}
	return members, nil
}

// syntaxError words a decoder error for a reader who has never seen
// encoding/json's own messages.
func syntaxError(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return errors.Wrap(err, "invalid JSON")
}

// intArray parses raw as a JSON array of integers (no fractions, exponents,
// nulls or values beyond int64).
func intArray(raw []byte) ([]int64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if tok != json.Delim('[') {
		return nil, errors.Errorf("%s is not an array of integers", abbreviate(raw))
	}
	ints := []int64{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, errors.Errorf("%s is not an array of integers", abbreviate(raw))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return nil, errors.Errorf("%s does not fit in 64 bits", num)
		}
		if err != nil {
			return nil, errors.Errorf("%s is not an integer", num)
		}
		ints = append(ints, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntaxError(err)
	}
	return ints, nil
}

// abbreviate shortens raw JSON for an error message.
func abbreviate(raw []byte) string {
	const max = 40
	if len(raw) > max {
		return strconv.Quote(string(raw[:max])) + "..."
	}
	return string(raw)
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
