package hf

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// member is one key and value of a JSON object, in file order.
type member struct {
	key   string
	value json.RawMessage
}

// members parses raw as exactly one JSON object and returns its members,
// refusing a key twice: encoding/json would keep the last silently, and
// Python's json.load does too, so a file with one is ambiguous.
func members(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil {
		return nil, jsonError(err)
	} else if tok != json.Delim('{') {
		return nil, errors.New("is not a JSON object")
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err)
		}
		key := tok.(string) // inside an object the decoder yields only string keys
		if seen[key] {
			return nil, errors.Errorf("key %s appears twice", msg.Quote(key))
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, errors.Wrapf(jsonError(err), "value of %s", msg.Quote(key))
		}
		out = append(out, member{key, value})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the end of the object")
	}
	return out, nil
}

// jsonError words a decoder error in one line.
func jsonError(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return errors.Wrap(err, "invalid JSON")
}

// configKeys are the top-level keys of a config.json. Its accessors take the
// key's transformers default when the file leaves it out, and refuse a value
// of the wrong type naming the key and the value.
type configKeys map[string]json.RawMessage

func parseConfig(raw []byte) (configKeys, error) {
	ms, err := members(raw)
	if err != nil {
		return nil, err
	}
	keys := configKeys{}
	for _, m := range ms {
		keys[m.key] = m.value
	}
	return keys, nil
}

// present reports whether the file sets key to something other than null.
func (c configKeys) present(key string) bool {
	raw, ok := c[key]
	return ok && string(raw) != "null"
}

// wrongValue is the error for a value that is not what key takes.
func (c configKeys) wrongValue(key, want string) error {
	return errors.Errorf("%s = %s: want %s", key, shown(c[key]), want)
}

// shown is a JSON value for a message: on one line, shortened.
func shown(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return msg.Quote(string(raw))
	}
	return msg.Shorten(b.String())
}

// str is key's string value, def when absent.
func (c configKeys) str(key, def string) (string, error) {
	if !c.present(key) {
		return def, nil
	}
	var s string
	if err := json.Unmarshal(c[key], &s); err != nil {
		return "", c.wrongValue(key, "a string")
	}
	return s, nil
}

// maxSize bounds every size a config gives: a width, a count or a
// vocabulary past it is a corrupt file, not a model.
const maxSize = 1 << 30

// Bounds on the counts of a model's parts, far above any model released
// (the deepest have about 128 layers, Llama 3.1 405B 126; the most heads
// per layer are Falcon 180B's 232). Each layer and each head costs
// tensors, graph nodes and per-head views whatever its width, which the
// weights' size, counted from the widths (checkSize), does not see: a
// well-formed file of 100,000 layers two wide takes a second per 5,000
// layers and a gigabyte before an estimate refuses it. Past these, the
// count is refused from config.json before another file is opened.
const (
	maxLayers = 1024
	maxHeads  = 1024
)

// size is key's value, a positive integer of at most maxSize, def when
// absent.
func (c configKeys) size(key string, def int) (int, error) {
	return c.sizeAtMost(key, def, maxSize, "")
}

// sizeAtMost is size with the bound limit, which why explains ("" for
// none).
func (c configKeys) sizeAtMost(key string, def, limit int, why string) (int, error) {
	if !c.present(key) {
		return def, nil
	}
	n, err := strconv.ParseInt(string(c[key]), 10, 64)
	if err != nil || n <= 0 || n > int64(limit) {
		return 0, c.wrongValue(key, "a positive integer of at most "+strconv.Itoa(limit)+why)
	}
	return int(n), nil
}

// layerCount and headCount are key's number of layers and of attention
// heads, within maxLayers and maxHeads.
func (c configKeys) layerCount(key string, def int) (int, error) {
	return c.sizeAtMost(key, def, maxLayers, " (the deepest models have about 128 layers)")
}

func (c configKeys) headCount(key string, def int) (int, error) {
	return c.sizeAtMost(key, def, maxHeads, " (the most heads a model has are about 250 a layer)")
}

// null reports whether the file sets key to null (transformers' None,
// which is not always the key's default).
func (c configKeys) null(key string) bool {
	raw, ok := c[key]
	return ok && string(raw) == "null"
}

// sizeOrNull is key's size, 0 when the file sets it to null, def when
// absent: a width transformers turns off with None.
func (c configKeys) sizeOrNull(key string, def int) (int, error) {
	if c.null(key) {
		return 0, nil
	}
	return c.size(key, def)
}

// count is key's value, a non-negative integer of at most maxSize, def
// when absent.
func (c configKeys) count(key string, def int) (int, error) {
	if !c.present(key) {
		return def, nil
	}
	n, err := strconv.ParseInt(string(c[key]), 10, 64)
	if err != nil || n < 0 || n > maxSize {
		return 0, c.wrongValue(key, "a non-negative integer of at most "+strconv.Itoa(maxSize))
	}
	return int(n), nil
}

// number is key's value, a finite JSON number, def when absent.
func (c configKeys) number(key string, def float64) (float64, error) {
	if !c.present(key) {
		return def, nil
	}
	var f float64
	if err := json.Unmarshal(c[key], &f); err != nil || math.IsInf(f, 0) {
		return 0, c.wrongValue(key, "a number")
	}
	return f, nil
}

// boolean is key's value, def when absent.
func (c configKeys) boolean(key string, def bool) (bool, error) {
	if !c.present(key) {
		return def, nil
	}
	var b bool
	if err := json.Unmarshal(c[key], &b); err != nil {
		return false, c.wrongValue(key, "true or false")
	}
	return b, nil
}

// firstArchitecture is architectures[0], "" when the list is absent or
// empty.
func (c configKeys) firstArchitecture() (string, error) {
	if !c.present("architectures") {
		return "", nil
	}
	var list []string
	if err := json.Unmarshal(c["architectures"], &list); err != nil {
		return "", c.wrongValue("architectures", "a list of class names")
	}
	if len(list) == 0 {
		return "", nil
	}
	return list[0], nil
}

// jsonStrings decodes raw into list if it is a JSON list of strings.
func jsonStrings(raw json.RawMessage, list *[]string) error {
	if len(raw) == 0 || raw[0] != '[' {
		return errors.New("not a list")
	}
	return json.Unmarshal(raw, list)
}

// jsonString decodes raw into s if it is a JSON string (null is not).
func jsonString(raw json.RawMessage, s *string) error {
	if len(raw) == 0 || raw[0] != '"' {
		return errors.New("not a string")
	}
	return json.Unmarshal(raw, s)
}
