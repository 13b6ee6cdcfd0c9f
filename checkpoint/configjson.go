package checkpoint

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/rundir"
)

// Bounds on a run config stored as JSON. A real one is a few kilobytes
// (a text task's characters may add a few hundred) and three levels deep.
const (
	maxConfigJSON  = 1 << 20
	maxConfigDepth = 8
)

// decodeConfigJSON decodes a run config stored as JSON over rundir.DefaultConfig
// (a key an older writer did not know keeps its default), refusing one
// longer than maxConfigJSON, nested deeper than maxConfigDepth, with a key
// twice in one object or a key rundir.Config does not have.
func decodeConfigJSON(src []byte) (rundir.Config, error) {
	if len(src) > maxConfigJSON {
		return rundir.Config{}, errors.Errorf("the run config is %d bytes, more than the %d a run config may take", len(src), maxConfigJSON)
	}
	if err := checkJSONShape(src); err != nil {
		return rundir.Config{}, errors.Wrap(err, "run config")
	}
	cfg := rundir.DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return rundir.Config{}, errors.Wrapf(err, "run config %s", abbreviate(src))
	}
	if dec.More() {
		return rundir.Config{}, errors.Errorf("run config %s: more than one JSON value", abbreviate(src))
	}
	return cfg, nil
}

// checkJSONShape refuses JSON nested deeper than maxConfigDepth or with a
// key twice in one object (encoding/json would keep the last, so a
// checkpoint could say "copy" to one reader and "reverse" to another). It
// walks the tokens without recursion, and names a key's path only when it
// refuses it, so its cost is linear in the input. Invalid JSON is left for
// the decoder to report.
func checkJSONShape(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type level struct {
		object  bool
		wantKey bool   // an object's next token is a key (or its end)
		key     string // an object's current key
		seen    map[string]bool
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		b.WriteString("the config")
		for _, l := range stack[:len(stack)-1] {
			if l.object {
				b.WriteString("." + l.key)
			} else {
				b.WriteString("[]")
			}
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey && tok != json.Delim('}') {
			top := &stack[n-1]
			name, _ := tok.(string)
			if top.seen[name] {
				return errors.Errorf("key %s appears twice in %s", msg.Quote(name), path())
			}
			top.seen[name], top.key, top.wantKey = true, name, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) == maxConfigDepth {
				return errors.Errorf("the config nests deeper than %d levels", maxConfigDepth)
			}
			open := tok == json.Delim('{')
			stack = append(stack, level{object: open, wantKey: open, seen: map[string]bool{}})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}

// abbreviate shortens JSON for an error message, keeping it on one line.
func abbreviate(raw []byte) string {
	const max = 60
	s := strings.Join(strings.Fields(string(raw)), " ")
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
