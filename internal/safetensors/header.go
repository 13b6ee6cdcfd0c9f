package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
)

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

// parsed is a checked header: its tensors in data order, the index of each
// by name, its metadata without the digest, the digest it records ("" when
// none) and the end of the last tensor's data.
type parsed struct {
	tensors  []Info
	byName   map[string]int
	metadata map[string]string
	digest   string
	end      int64
}

// layout parses header and checks that its tensors, each within the
// sectionLen-byte data section, tile the start of it without overlap or
// gap, within bounds.
func layout(header []byte, sectionLen int64, bounds Bounds) (parsed, error) {
	h, err := parseHeader(header, sectionLen, bounds)
	if err != nil {
		return parsed{}, err
	}
	digest, err := takeDigest(h.metadata)
	if err != nil {
		return parsed{}, err
	}
	tensors := h.tensors
	sort.SliceStable(tensors, func(i, j int) bool {
		if tensors[i].Begin != tensors[j].Begin {
			return tensors[i].Begin < tensors[j].Begin
		}
		return tensors[i].End < tensors[j].End
	})
	var pos int64
	for i, e := range tensors {
		if e.Begin < pos {
			p := tensors[i-1]
			return parsed{}, errors.Errorf("tensor %q: data_offsets [%d %d] overlap tensor %q [%d %d]",
				e.Name, e.Begin, e.End, p.Name, p.Begin, p.End)
		}
		if e.Begin > pos {
			return parsed{}, errors.Errorf("tensor %q: data_offsets [%d %d] leave data bytes [%d, %d) covered by no tensor",
				e.Name, e.Begin, e.End, pos, e.Begin)
		}
		pos = e.End
		h.byName[e.Name] = i
	}
	return parsed{tensors: tensors, byName: h.byName, metadata: h.metadata, digest: digest, end: pos}, nil
}

// intShape converts a shape checked by checkEntry (its byte size fits in
// an int64) to ints.
func intShape(shape []int64) []int {
	out := make([]int, len(shape))
	for i, d := range shape {
		out[i] = int(d)
	}
	return out
}

// tensorsIn returns the tensors of infos (from layout) over section; a nil
// section (the header alone) gives tensors with nil Data.
func tensorsIn(infos []Info, section []byte) []Tensor {
	tensors := make([]Tensor, len(infos))
	for i, in := range infos {
		tensors[i] = Tensor{Name: in.Name, DType: in.DType, Shape: in.Shape}
		if section != nil {
			tensors[i].Data = section[in.Begin:in.End:in.End]
		}
	}
	return tensors
}

// Bounds are what a caller knows a file may hold (OpenBounded), checked as
// the header is parsed. The zero value bounds nothing.
type Bounds struct {
	// Tensors, when positive, is the most tensors the header may list.
	Tensors int
	// ZeroSize, when Tensors is positive, is the most of them that may
	// have no elements (a zero in the shape): such a tensor costs a header
	// its record and nothing else.
	ZeroSize int
}

// TooManyTensorsError is the error of a header that lists more tensors, or
// more tensors of no elements, than its Bounds allow.
type TooManyTensorsError struct {
	Max      int
	ZeroSize bool // the bound passed is Bounds.ZeroSize
}

func (e *TooManyTensorsError) Error() string {
	if e.ZeroSize {
		return fmt.Sprintf("header lists more than %d tensors of no elements (a zero in the shape), the most allowed", e.Max)
	}
	return fmt.Sprintf("header lists more than %d tensors, the most allowed", e.Max)
}

// check refuses the header's next tensor, after listed tensors of which
// zeroSize have no elements, when it is one too many.
func (b Bounds) check(listed, zeroSize int) error {
	switch {
	case b.Tensors <= 0:
		return nil
	case listed >= b.Tensors:
		return &TooManyTensorsError{Max: b.Tensors}
	case zeroSize > b.ZeroSize:
		return &TooManyTensorsError{Max: b.ZeroSize, ZeroSize: true}
	}
	return nil
}

// headerEntries are a header's tensors in file order, each checked against
// itself and the size of the data section but not yet against the others,
// with the index of each by name, and its metadata.
type headerEntries struct {
	tensors  []Info
	byName   map[string]int
	metadata map[string]string
}

// firstRoom is the tensors parseHeader makes room for at first; past it,
// the room doubles (up to the header's member count), so the tensors are
// copied about once in all, and a header refused early costs no more than
// twice what it listed.
const firstRoom = 1024

// room makes room for the next tensor of at most total.
func (h *headerEntries) room(total int) {
	if n := len(h.tensors); n == cap(h.tensors) {
		h.tensors = slices.Grow(h.tensors, max(1, min(total, 2*n)-n))
	}
}

// parseHeader reads the header's members one at a time, in one pass over
// its bytes, and stops at the first one at fault: a header is refused
// after decoding only as far as its first bad tensor, or the first tensor
// past its bounds. JSON syntax is checked first, over the whole header,
// without decoding anything.
func parseHeader(header []byte, sectionLen int64, bounds Bounds) (headerEntries, error) {
	if !utf8.Valid(header) {
		return headerEntries{}, errors.New("header is not valid UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return headerEntries{}, errors.Errorf("header does not start with '{' (not a safetensors file?)")
	}
	if !json.Valid(header) {
		return headerEntries{}, errors.Wrap(syntaxFault(header), "header")
	}
	total := scanner{b: header, i: 1}.members()
	if bounds.Tensors > 0 {
		total = min(total, bounds.Tensors+1)
	}
	first := min(total, firstRoom)
	h := headerEntries{tensors: make([]Info, 0, first), byName: make(map[string]int, first), metadata: map[string]string{}}
	s := scanner{b: header, i: 1}
	var dims []int64 // reused by every entry
	zeroSize := 0
	for s.ws(); s.more(); s.ws() {
		key, value, err := s.member()
		if err != nil {
			return headerEntries{}, errors.Wrap(err, "header")
		}
		if _, twice := h.byName[key]; twice {
			return headerEntries{}, errors.Errorf("header: duplicate tensor name %q", key)
		}
		h.byName[key] = -1
		if key == metadataKey {
			if h.metadata, err = parseMetadata(value); err != nil {
				return headerEntries{}, err
			}
			continue
		}
		if err := bounds.check(len(h.tensors), zeroSize); err != nil {
			return headerEntries{}, err
		}
		in, err := parseEntry(key, value, sectionLen, &dims)
		if err != nil {
			return headerEntries{}, errors.Wrapf(err, "tensor %q", key)
		}
		if in.Len() == 0 {
			zeroSize++
			if err := bounds.check(len(h.tensors), zeroSize); err != nil {
				return headerEntries{}, err
			}
		}
		h.room(total)
		h.tensors = append(h.tensors, in)
	}
	delete(h.byName, metadataKey)
	return h, nil
}

// syntaxFault is the error encoding/json's decoder gives for a header that
// is not valid JSON, in the words every reader has used.
func syntaxFault(header []byte) error {
	if err := eachMember(header, "tensor name", func(string, json.RawMessage) error { return nil }); err != nil {
		return err
	}
	return errors.New("invalid JSON")
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

// fields are the values of one tensor's header record.
type fields struct {
	dtype      string
	shape      []int64
	begin, end int64
}

// parseEntry reads one tensor's header record and checks it against
// itself and the size of the data section. Records as writers write them
// are read by commonFields without allocating; anything else (escapes,
// unknown or repeated fields, numbers that are not plain integers) by
// entryFields, which words the fault. dims is scratch for the shape,
// reused from one record to the next.
func parseEntry(name string, raw []byte, sectionLen int64, dims *[]int64) (Info, error) {
	f, ok := commonFields(raw, (*dims)[:0])
	if ok {
		*dims = f.shape
	} else {
		var err error
		if f, err = entryFields(raw); err != nil {
			return Info{}, err
		}
	}
	return checkEntry(name, f, sectionLen)
}

// entryFields reads a tensor's header record, refusing anything
// ambiguous by name.
func entryFields(raw []byte) (fields, error) {
	members, err := objectMembers(raw, "field")
	if err != nil {
		return fields{}, err
	}
	var f fields
	var haveDType, haveShape, haveOffsets bool
	for _, m := range members {
		switch m.key {
		case "dtype":
			if len(m.value) == 0 || m.value[0] != '"' {
				return fields{}, errors.Errorf("dtype %s is not a string", abbreviate(m.value))
			}
			if err := json.Unmarshal(m.value, &f.dtype); err != nil {
				return fields{}, errors.Wrap(err, "dtype")
			}
			haveDType = true
		case "shape":
			if f.shape, err = intArray(m.value); err != nil {
				return fields{}, errors.Wrap(err, "shape")
			}
			haveShape = true
		case "data_offsets":
			offsets, err := intArray(m.value)
			if err != nil {
				return fields{}, errors.Wrap(err, "data_offsets")
			}
			if len(offsets) != 2 {
				return fields{}, errors.Errorf("data_offsets %v: want [begin, end]", offsets)
			}
			f.begin, f.end = offsets[0], offsets[1]
			haveOffsets = true
		default:
			return fields{}, errors.Errorf("unknown field %q", m.key)
		}
	}
	switch {
	case !haveDType:
		return fields{}, errors.New("no dtype")
	case !haveShape:
		return fields{}, errors.New("no shape")
	case !haveOffsets:
		return fields{}, errors.New("no data_offsets")
	}
	return f, nil
}

// checkEntry checks a tensor's fields against themselves and the size of
// the data section.
func checkEntry(name string, f fields, sectionLen int64) (Info, error) {
	size, err := byteSize(f.dtype, f.shape)
	if err != nil {
		return Info{}, err
	}
	if f.begin < 0 || f.end < f.begin {
		return Info{}, errors.Errorf("data_offsets [%d %d] are not a range", f.begin, f.end)
	}
	if f.end > sectionLen {
		return Info{}, errors.Errorf("data_offsets [%d %d] run past the end of the %d-byte data section (truncated file?)",
			f.begin, f.end, sectionLen)
	}
	if f.end-f.begin != size {
		return Info{}, errors.Errorf("shape %v of %s needs %d bytes, data_offsets [%d %d] hold %d",
			f.shape, f.dtype, size, f.begin, f.end, f.end-f.begin)
	}
	return Info{Name: name, DType: f.dtype, Shape: intShape(f.shape), Begin: f.begin, End: f.end}, nil
}

// commonFields reads raw, a valid JSON value, when it is a record as
// writers write it: an object of "dtype" (a known dtype), "shape" and
// "data_offsets" (two) as arrays of plain integers, each once, no
// escapes. ok is false for anything else, which entryFields then reads.
// shape is appended to dims.
func commonFields(raw []byte, dims []int64) (f fields, ok bool) {
	s := scanner{b: raw}
	s.ws()
	if !s.next('{') {
		return fields{}, false
	}
	var seen [3]bool
	for s.ws(); s.more(); s.ws() {
		key, plain := s.plainString()
		if !plain || !s.colon() {
			return fields{}, false
		}
		var field int
		switch string(key) {
		case "dtype":
			name, plain := s.plainString()
			if _, known := dtypeSizes[string(name)]; !plain || !known {
				return fields{}, false
			}
			f.dtype = string(name)
		case "shape":
			field = 1
			if f.shape, ok = s.plainInts(dims); !ok {
				return fields{}, false
			}
		case "data_offsets":
			field = 2
			var pair [2]int64
			offsets, ok := s.plainInts(pair[:0])
			if !ok || len(offsets) != 2 {
				return fields{}, false
			}
			f.begin, f.end = offsets[0], offsets[1]
		default:
			return fields{}, false
		}
		if seen[field] {
			return fields{}, false
		}
		seen[field] = true
		s.ws()
		s.next(',')
	}
	return f, seen == [3]bool{true, true, true} && s.next('}')
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
	var members []member
	err := eachMember(raw, keyKind, func(key string, value json.RawMessage) error {
		members = append(members, member{key, append(json.RawMessage{}, value...)})
		return nil
	})
	return members, err
}

// eachMember parses raw as objectMembers does and hands visit each member
// as it is decoded; the value's bytes are reused for the next member.
func eachMember(raw []byte, keyKind string, visit func(key string, value json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(err)
	}
	if tok != json.Delim('{') {
		return errors.Errorf("%s is not a JSON object", abbreviate(raw))
	}
	seen := map[string]bool{}
	var value json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		key, ok := tok.(string)
		if !ok {
			return errors.Errorf("object key %v is not a string", tok)
		}
		if seen[key] {
			return errors.Errorf("duplicate %s %q", keyKind, key)
		}
		seen[key] = true
		if err := dec.Decode(&value); err != nil {
			return errors.Wrapf(syntaxError(err), "value of %q", key)
		}
		if err := visit(key, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntaxError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: data after the end of the object")
	}
	return nil
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

// abbreviate shortens raw JSON for an error message, its control, format
// and invalid bytes escaped (escape.Label) so that the message stays one
// line that a terminal only shows.
func abbreviate(raw []byte) string {
	const max = 40
	if len(raw) > max {
		return strconv.Quote(string(raw[:max])) + "..."
	}
	return escape.Label(string(raw))
}
