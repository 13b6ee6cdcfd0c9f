package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
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

// parsed is a checked header: its tensors in data order, its metadata
// without the digest, the digest it records ("" when none) and the end of
// the last tensor's data.
type parsed struct {
	entries  []entry
	metadata map[string]string
	digest   string
	end      int64
}

// layout parses header and checks that its tensors, each within the
// sectionLen-byte data section, tile the start of it without overlap or
// gap.
func layout(header []byte, sectionLen int64) (parsed, error) {
	entries, metadata, err := parseHeader(header, sectionLen)
	if err != nil {
		return parsed{}, err
	}
	digest, err := takeDigest(metadata)
	if err != nil {
		return parsed{}, err
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
			return parsed{}, errors.Errorf("tensor %q: data_offsets [%d %d] overlap tensor %q [%d %d]",
				e.name, e.begin, e.end, p.name, p.begin, p.end)
		}
		if e.begin > pos {
			return parsed{}, errors.Errorf("tensor %q: data_offsets [%d %d] leave data bytes [%d, %d) covered by no tensor",
				e.name, e.begin, e.end, pos, e.begin)
		}
		pos = e.end
	}
	return parsed{entries: entries, metadata: metadata, digest: digest, end: pos}, nil
}

// tensors returns the Info of each tensor, in data order.
func (p parsed) tensors() []Info {
	infos := make([]Info, len(p.entries))
	for i, e := range p.entries {
		infos[i] = Info{Name: e.name, DType: e.dtype, Shape: intShape(e.shape), Begin: e.begin, End: e.end}
	}
	return infos
}

// intShape converts a shape checked by parseEntry (its byte size fits in an
// int64) to ints.
func intShape(shape []int64) []int {
	out := make([]int, len(shape))
	for i, d := range shape {
		out[i] = int(d)
	}
	return out
}

// tensorsIn returns the tensors of entries (from layout) over section; a nil
// section (the header alone) gives tensors with nil Data.
func tensorsIn(entries []entry, section []byte) []Tensor {
	tensors := make([]Tensor, len(entries))
	for i, e := range entries {
		tensors[i] = Tensor{Name: e.name, DType: e.dtype, Shape: intShape(e.shape)}
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
