package safetensors

import (
	"encoding/json"

	"github.com/pkg/errors"
)

// scanner walks a JSON text that json.Valid accepted, one member or value
// at a time, without building anything it does not return. Its methods
// never read past the end of the text, whatever it holds.
type scanner struct {
	b []byte
	i int
}

// ws skips white space.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next consumes c if it comes next.
func (s *scanner) next(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// more reports whether an object or array continues (what comes next is
// not its closing bracket).
func (s *scanner) more() bool {
	return s.i < len(s.b) && s.b[s.i] != '}' && s.b[s.i] != ']'
}

// colon consumes the white space and colon after an object's key.
func (s *scanner) colon() bool {
	s.ws()
	ok := s.next(':')
	s.ws()
	return ok
}

// skipString moves past the string that starts at s.i and reports
// whether it holds an escape.
func (s *scanner) skipString() (escaped bool) {
	for s.i++; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			escaped = true
			s.i++
		}
	}
	s.i++
	return escaped
}

// plainString reads a string without escapes: its bytes, and false when
// there is no string next or it holds an escape.
func (s *scanner) plainString() ([]byte, bool) {
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' || s.skipString() || s.i > len(s.b) {
		return nil, false
	}
	return s.b[start+1 : s.i-1], true
}

// member reads an object's next key and value, and the comma after them.
// The key is decoded as encoding/json decodes it; the value is its bytes.
func (s *scanner) member() (key string, value []byte, err error) {
	start := s.i
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", nil, errors.New("invalid JSON: want a key")
	}
	escaped := s.skipString()
	if s.i > len(s.b) {
		return "", nil, errors.New("invalid JSON: unexpected end of input")
	}
	if escaped {
		err = json.Unmarshal(s.b[start:s.i], &key)
	} else {
		key = string(s.b[start+1 : s.i-1])
	}
	if !s.colon() {
		return "", nil, errors.New("invalid JSON: want a colon after a key")
	}
	value = s.value()
	s.ws()
	s.next(',')
	return key, value, err
}

// members counts the members of the object whose first member starts at
// s.i, without decoding them.
func (s scanner) members() int {
	n := 0
	for s.ws(); s.more(); s.ws() {
		s.skipString()
		s.colon()
		s.value()
		s.ws()
		s.next(',')
		n++
	}
	return n
}

// value moves past the value that starts at s.i and returns its bytes.
func (s *scanner) value() []byte {
	start, depth := s.i, 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.skipString()
		case c == '{' || c == '[':
			depth++
			s.i++
		case depth == 0 && (c == '}' || c == ']' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return s.b[start:s.i]
		case c == '}' || c == ']':
			depth--
			s.i++
		default:
			s.i++
		}
	}
	return s.b[start:min(s.i, len(s.b))]
}

// plainInts reads an array of integers written as plain digits (an
// optional minus sign, at most 18 digits, so no value overflows) and
// appends them to dst; false when anything else is next.
func (s *scanner) plainInts(dst []int64) ([]int64, bool) {
	if !s.next('[') {
		return nil, false
	}
	for s.ws(); s.more(); s.ws() {
		start := s.i
		s.next('-')
		digits := s.i
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
		}
		if n := s.i - digits; n == 0 || n > 18 {
			return nil, false
		}
		var v int64
		for _, c := range s.b[digits:s.i] {
			v = 10*v + int64(c-'0')
		}
		if s.i > digits && start < digits {
			v = -v
		}
		dst = append(dst, v)
		s.ws()
		if !s.next(',') && !(s.i < len(s.b) && s.b[s.i] == ']') {
			return nil, false
		}
	}
	if !s.next(']') {
		return nil, false
	}
	return dst, true
}
