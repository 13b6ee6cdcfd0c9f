package tokenizer

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// maxJSONDepth bounds nesting: a tokenizer.json nests about 5 deep.
const maxJSONDepth = 32

// checkJSON refuses raw unless it is exactly one JSON value, nested at most
// maxJSONDepth deep, with no key twice in one object (encoding/json would
// keep the last, so one file could give a token two ids). It walks tokens
// without recursion, so its cost is linear in the input.
func checkJSON(raw []byte) error { return checkJSONAt(raw, "", 0) }

// checkJSONAt is checkJSON for a value found at path (as messages name its
// objects: "model.vocab"), nested depth levels deep in its file.
func checkJSONAt(raw []byte, path string, depth int) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // a number is checked where it is used, not as a float64
	type level struct {
		object  bool
		wantKey bool // an object's next token is a key (or its end)
		key     string
		seen    map[string]bool
	}
	var stack []*level
	// container names the innermost object for a message: "model.vocab".
	container := func() string {
		var where strings.Builder
		where.WriteString(path)
		for _, l := range stack[:len(stack)-1] {
			switch {
			case !l.object:
				where.WriteString("[]")
			case where.Len() == 0:
				where.WriteString(l.key)
			default:
				where.WriteString("." + l.key)
			}
		}
		if where.Len() == 0 {
			return "the top-level object"
		}
		return msg.Clean(where.String())
	}
	done := false // the top-level value is complete
	for {
		tok, err := dec.Token()
		if err == io.EOF && done {
			return nil
		}
		if err != nil {
			return jsonSyntax(err, dec.InputOffset())
		}
		if done {
			return errors.Errorf("not JSON: more data after the value, at byte %d", dec.InputOffset())
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey && tok != json.Delim('}') {
			top := stack[n-1]
			key, _ := tok.(string)
			if top.seen[key] {
				return errors.Errorf("key %s appears twice in %s", msg.Quote(key), container())
			}
			top.seen[key], top.key, top.wantKey = true, key, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if depth+len(stack) == maxJSONDepth {
				return errors.Errorf("JSON nests deeper than %d levels", maxJSONDepth)
			}
			object := tok == json.Delim('{')
			stack = append(stack, &level{object: object, wantKey: object, seen: map[string]bool{}})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 {
			stack[n-1].wantKey = stack[n-1].object
		} else {
			done = true
		}
	}
}

// jsonSyntax words a decoder error for a reader who has never seen
// encoding/json's own messages.
func jsonSyntax(err error, offset int64) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.Errorf("not JSON: it ends early, at byte %d", offset)
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return errors.Errorf("not JSON: %s at byte %d", strings.TrimPrefix(syntax.Error(), "json: "), syntax.Offset)
	}
	return errors.New("not JSON: " + msg.Shorten(err.Error()))
}

// parseJSONInt reads a JSON integer (no fraction, exponent or quotes).
func parseJSONInt(raw json.RawMessage) (int, bool) {
	s := string(bytes.TrimSpace(raw))
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// showJSON shows a JSON value in a message: as it is when short and
// printable (`["h"]`, `1.5`), else quoted and shortened by msg.Quote.
func showJSON(raw json.RawMessage) string {
	var compact bytes.Buffer
	s := string(raw)
	if json.Compact(&compact, raw) == nil {
		s = compact.String()
	}
	if len(s) > msg.MaxShown || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return msg.Quote(s)
	}
	return s
}
