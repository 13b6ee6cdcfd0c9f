package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// splicer is the reader a jsonStream decodes a tokenizer.json through. It
// passes the file on as it is, except the entries of model.vocab and
// model.merges (nearly all of a file), which it reads itself, an entry at
// a time, with the checks jsonStream's vocab and merges make and their
// messages, and passes on as {} and []: encoding/json's decoder takes
// about a second for Gemma 3's 33 MB, this a small part of that. What it
// does not recognise (a key written with escapes, a vocabulary that is
// not an object) it passes on whole, for jsonStream to read and refuse as
// before.
type splicer struct {
	src      *bufio.Reader
	off      int64   // bytes read from src
	stack    []frame // the containers open where src is
	inString bool
	escaped  bool
	keyAt    int       // the depth of the key being read, 0 for none
	key      []byte    // the key being read
	keys     [3]string // the last key read at depths 1 and 2 ("model", "vocab")
	pending  []byte    // bytes to pass on before reading more
	value    []byte    // an entry being read, reused

	passed int64   // bytes passed on
	shifts []shift // where the file and what is passed on part

	vocab      map[string]int // model.vocab, nil until read here
	merges     [][2]string    // model.merges, read here when mergesRead, before the vocabulary
	mergeIDs   [][3]int32     // model.merges, read here when mergesRead, after the vocabulary
	joined     []byte         // a merge's two tokens joined, reused
	mergesRead bool
	err        error // the first problem found in either
	passAll    bool  // pass model.vocab and model.merges on too, for jsonStream to read (a test compares the two)
}

// shift says that from byte at of what is passed on, the file is delta
// bytes further on (what readPart read less what it passed on).
type shift struct{ at, delta int64 }

// fileOffset is the byte of the file that byte off of what was passed on
// stands for.
func (s *splicer) fileOffset(off int64) int64 {
	delta := int64(0)
	for _, sh := range s.shifts {
		if off >= sh.at {
			delta = sh.delta
		}
	}
	return off + delta
}

// frame is one open container: an object (whose next string, when
// wantKey, is a key) or an array.
type frame struct{ object, wantKey bool }

func newSplicer(r io.Reader) *splicer {
	return &splicer{src: bufio.NewReaderSize(r, 64<<10)}
}

// Read passes the file on, reading model.vocab and model.merges itself
// when it comes to them.
func (s *splicer) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(s.pending) > 0 {
			c := copy(p[n:], s.pending)
			s.pending, n = s.pending[c:], n+c
			continue
		}
		if s.err != nil {
			return n, s.err
		}
		b, err := s.src.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		s.off++
		s.passed++
		p[n] = b
		n++
		if s.step(b) && !s.passAll {
			s.readPart()
		}
	}
	return n, nil
}

// step follows the file's structure past b, and says b is the colon
// before model.vocab's or model.merges's value.
func (s *splicer) step(b byte) bool {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case b == '\\':
			s.escaped = true
		case b == '"':
			s.inString = false
			if s.keyAt > 0 {
				s.keys[s.keyAt] = string(s.key)
				s.keyAt = 0
			}
			return false
		}
		if s.keyAt > 0 {
			s.key = append(s.key, b)
		}
		return false
	}
	depth := len(s.stack)
	switch b {
	case '"':
		s.inString = true
		if depth > 0 && depth < len(s.keys) && s.stack[depth-1].wantKey {
			s.keyAt, s.key = depth, s.key[:0]
		}
	case '{', '[':
		s.stack = append(s.stack, frame{object: b == '{', wantKey: b == '{'})
	case '}', ']':
		if depth > 0 {
			s.stack = s.stack[:depth-1]
		}
	case ',':
		if depth > 0 && s.stack[depth-1].object {
			s.stack[depth-1].wantKey = true
		}
	case ':':
		if depth > 0 {
			s.stack[depth-1].wantKey = false
		}
		return depth == 2 && s.keys[1] == "model" && (s.keys[2] == "vocab" || s.keys[2] == "merges")
	}
	return false
}

// readPart reads the value of model.vocab or model.merges when it is an
// object or an array, passing on an empty one in its place.
func (s *splicer) readPart() {
	open := byte('{')
	if s.keys[2] == "merges" {
		open = '['
	}
	if s.skipSpace() != nil {
		return
	}
	if b, err := s.src.Peek(1); err != nil || b[0] != open {
		return // passed on as it is, for jsonStream to read or refuse
	}
	s.src.Discard(1)
	s.off++
	if open == '{' {
		s.err = s.readVocab()
		s.pending = append(s.pending, "{}"...)
	} else {
		s.err = s.readMerges()
		s.pending = append(s.pending, "[]"...)
	}
	s.passed += 2
	s.shifts = append(s.shifts, shift{at: s.passed, delta: s.off - s.passed})
}

// readVocab reads model.vocab's entries after its '{', as jsonStream's
// vocab does.
func (s *splicer) readVocab() error {
	s.vocab = map[string]int{}
	return s.entries('}', "model.vocab", func(int) error {
		if chunk, _ := s.src.Peek(s.src.Buffered()); len(chunk) > 0 {
			if name, id, n, ok := scanPlainEntry(chunk); ok {
				err := s.addToken(string(name), id)
				s.src.Discard(n)
				s.off += int64(n)
				return err
			}
		}
		raw, err := s.readValue()
		if err != nil {
			return err
		}
		name, ok := plainString(raw)
		if !ok && json.Unmarshal(raw, &name) != nil {
			return s.syntax("model.vocab")
		}
		if err := s.addToken(name, -1); err != nil {
			return err
		}
		if err := s.skipSpace(); err != nil {
			return err
		}
		if b, err := s.src.ReadByte(); err != nil || b != ':' {
			return s.syntax("model.vocab")
		}
		s.off++
		if err := s.skipSpace(); err != nil {
			return err
		}
		if raw, err = s.readValue(); err != nil {
			return err
		}
		id, ok := plainInt(raw)
		if !ok {
			if err := checkJSONAt(raw, "model.vocab."+name, 3); err != nil {
				return err
			}
			return errors.Errorf("model.vocab: token %s has id %s: want an integer", msg.Quote(name), showJSON(raw))
		}
		s.vocab[name] = id
		return nil
	})
}

// addToken adds a token to the vocabulary, refusing it twice or past
// maxVocab; id -1 checks it only, its id read next.
func (s *splicer) addToken(name string, id int) error {
	if _, twice := s.vocab[name]; twice {
		return errors.Errorf("key %s appears twice in model.vocab", msg.Quote(name))
	}
	if len(s.vocab) == maxVocab {
		return errors.Errorf("model.vocab: more than %d tokens, the most a vocabulary may hold", maxVocab)
	}
	if id >= 0 {
		s.vocab[name] = id
	}
	return nil
}

// readMerges reads model.merges's entries after its '[', as jsonStream's
// merges does.
func (s *splicer) readMerges() error {
	s.mergesRead = true
	vocabSeen := s.vocab != nil
	return s.entries(']', "model.merges", func(i int) error {
		if i == maxMerges {
			return errors.Errorf("model.merges: more than %d merges, the most a vocabulary of at most %d tokens has", maxMerges, maxVocab)
		}
		if chunk, _ := s.src.Peek(s.src.Buffered()); vocabSeen && len(chunk) > 0 {
			if a, b, n, ok := scanPlainMerge(chunk); ok {
				err := s.mergeByID(a, b, i) // before Discard: a and b are the buffer's
				s.src.Discard(n)
				s.off += int64(n)
				return err
			}
		}
		raw, err := s.readValue()
		if err != nil {
			return err
		}
		if a, b, ok := plainMerge(raw); ok && vocabSeen {
			return s.mergeByID(a, b, i)
		}
		pair, err := parseMerge(i, raw)
		if err != nil {
			if deep := checkJSONAt(raw, "model.merges[]", 3); deep != nil {
				return deep
			}
			return err
		}
		if vocabSeen {
			return s.mergeByID([]byte(pair[0]), []byte(pair[1]), i)
		}
		s.merges = append(s.merges, pair)
		return nil
	})
}

// mergeByID keeps merge i, a b, as the ids of a, b and ab, refusing it
// as mergeInVocab does when the vocabulary lacks one.
func (s *splicer) mergeByID(a, b []byte, i int) error {
	s.joined = append(append(s.joined[:0], a...), b...)
	var ids [3]int32
	for j, name := range [][]byte{a, b, s.joined} {
		id, ok := s.vocab[string(name)]
		if !ok {
			return errors.Errorf("model.merges[%d]: merge %s %s: %s is not in the vocabulary", i, msg.Quote(string(a)), msg.Quote(string(b)), msg.Quote(string(name)))
		}
		ids[j] = int32(id)
	}
	s.mergeIDs = append(s.mergeIDs, ids)
	return nil
}

// entries reads the entries of an object or array up to its close, with
// entry reading each (the i-th); where names the value in errors.
func (s *splicer) entries(close byte, where string, entry func(i int) error) error {
	for i := 0; ; i++ {
		if err := s.skipSpace(); err != nil {
			return err
		}
		if b, _ := s.src.Peek(1); i == 0 && len(b) == 1 && b[0] == close {
			s.src.Discard(1)
			s.off++
			return nil
		}
		if err := entry(i); err != nil {
			return err
		}
		if err := s.skipSpace(); err != nil {
			return err
		}
		b, err := s.src.ReadByte()
		if err != nil {
			return s.syntax(where)
		}
		s.off++
		switch b {
		case close:
			return nil
		case ',':
		default:
			return s.syntax(where)
		}
	}
}

// plainMerge reads a merge written without escapes, "a b" or ["a","b"]
// (nearly all are), as parseMerge would; ok is false for any other.
func plainMerge(raw []byte) (a, b []byte, ok bool) {
	if bytes.IndexByte(raw, '\\') >= 0 || len(raw) < 2 || !utf8.Valid(raw) {
		return nil, nil, false
	}
	if raw[0] == '"' {
		a, b, ok := bytes.Cut(raw[1:len(raw)-1], []byte{' '})
		if !ok || len(a) == 0 || len(b) == 0 || bytes.IndexByte(b, ' ') >= 0 || bytes.IndexByte(raw[1:len(raw)-1], '"') >= 0 {
			return nil, nil, false
		}
		return a, b, true
	}
	if raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, nil, false
	}
	first, second, ok := bytes.Cut(raw[1:len(raw)-1], []byte{','})
	if !ok {
		return nil, nil, false
	}
	if a, ok = quotedPlain(first); ok {
		b, ok = quotedPlain(second)
	}
	return a, b, ok
}

// quotedPlain is the inside of a JSON string written without escapes,
// with space around it; a comma or quote inside is refused, for
// parseMerge to read.
func quotedPlain(p []byte) ([]byte, bool) {
	p = bytes.TrimSpace(p)
	if len(p) < 3 || p[0] != '"' || p[len(p)-1] != '"' {
		return nil, false
	}
	inner := p[1 : len(p)-1]
	for _, c := range inner {
		if c < 0x20 || c == '"' || c == ',' {
			return nil, false
		}
	}
	return inner, true
}

// plainString reads a JSON string written without escapes (nearly every
// token is), as encoding/json would; ok is false for any other.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	ascii := true
	for _, b := range inner {
		if b < 0x20 || b == '\\' || b == '"' {
			return "", false
		}
		ascii = ascii && b < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(inner) {
		return "", false // encoding/json writes U+FFFD for each bad byte
	}
	return string(inner), true
}

// plainInt reads a JSON integer, as parseJSONInt does, without
// allocating.
func plainInt(raw []byte) (int, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	switch {
	case len(digits) > 1 && digits[0] == '0':
		return 0, false // JSON has no leading zeros: encoding/json refuses them
	case len(digits) == 0 || len(digits) > 18:
		return parseJSONInt(raw)
	}
	n := 0
	for _, b := range digits {
		if b < '0' || b > '9' {
			return 0, false
		}
		n = n*10 + int(b-'0')
	}
	if len(digits) < len(raw) {
		n = -n
	}
	return n, true
}

// syntax is the error for a byte that cannot come where it is.
func (s *splicer) syntax(where string) error {
	return errors.Errorf("not JSON: %s is malformed at byte %d", where, s.off)
}

// skipSpace reads past whitespace.
func (s *splicer) skipSpace() error {
	for {
		chunk, _ := s.src.Peek(max(1, s.src.Buffered()))
		if len(chunk) == 0 {
			return errors.Errorf("not JSON: it ends early, at byte %d", s.off)
		}
		n := 0
		for n < len(chunk) && (chunk[n] == ' ' || chunk[n] == '\t' || chunk[n] == '\n' || chunk[n] == '\r') {
			n++
		}
		s.src.Discard(n)
		s.off += int64(n)
		if n < len(chunk) {
			return nil
		}
	}
}

// readValue reads one JSON value (a string, a number or literal, or a
// container, nested at most maxJSONDepth deep) into s.value, checking only
// where it ends: what it holds is checked by whoever reads it.
func (s *splicer) readValue() ([]byte, error) {
	s.value = s.value[:0]
	depth, inString, escaped, started := 0, false, false, false
	for {
		chunk, _ := s.src.Peek(max(1, s.src.Buffered()))
		if len(chunk) == 0 {
			return nil, errors.Errorf("not JSON: it ends early, at byte %d", s.off)
		}
		for i, b := range chunk {
			end := false
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case b == '\\':
					escaped = true
				case b == '"':
					inString = false
					end = depth == 0
				}
			case b == '"':
				inString = true
			case b == '{' || b == '[':
				if depth++; depth > maxJSONDepth {
					return nil, errors.Errorf("JSON nests deeper than %d levels", maxJSONDepth)
				}
			case b == '}' || b == ']':
				if depth == 0 {
					return s.scalarEnd(chunk, i, started)
				}
				depth--
				end = depth == 0
			case depth == 0 && (b == ',' || b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == ':'):
				return s.scalarEnd(chunk, i, started)
			}
			started = true
			if end {
				s.value = append(s.value, chunk[:i+1]...)
				s.src.Discard(i + 1)
				s.off += int64(i + 1)
				return s.value, nil
			}
		}
		s.value = append(s.value, chunk...)
		s.src.Discard(len(chunk))
		s.off += int64(len(chunk))
	}
}

// scalarEnd ends a number or literal before chunk[i], the byte after it.
func (s *splicer) scalarEnd(chunk []byte, i int, started bool) ([]byte, error) {
	if !started && i == 0 && len(s.value) == 0 {
		return nil, errors.Errorf("not JSON: a value is missing at byte %d", s.off)
	}
	s.value = append(s.value, chunk[:i]...)
	s.src.Discard(i)
	s.off += int64(i)
	return s.value, nil
}
