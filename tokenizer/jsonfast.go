package tokenizer

import (
	"bytes"
	"unicode/utf8"
)

// The splicer's fast paths: nearly every entry of a tokenizer.json's
// vocabulary and merges is plain ("token": id, ["a", "b"] or "a b", no
// escapes) and lies whole in the buffer already read, so it is read there
// without copying. Anything else is left to readValue and the readers
// that check what it read (FuzzSplicerAgrees holds the two equal).

// skipJSONSpace is the index of the first byte of b at or after i that is
// not JSON whitespace, len(b) for none.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// scanPlainString reads the plain string starting b[i] ('"'): its inside
// and the index after its closing quote; ok is false for an escape, a
// control character, a byte that is not UTF-8, or no closing quote in b.
func scanPlainString(b []byte, i int) (inside []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 {
		return nil, 0, false
	}
	inside = b[i+1 : i+1+end]
	ascii := true
	for _, c := range inside {
		if c < 0x20 || c == '\\' {
			return nil, 0, false
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if !ascii && !utf8.Valid(inside) {
		return nil, 0, false
	}
	return inside, i + 2 + end, true
}

// scanPlainMerge reads a plain merge at the start of b, "a b" or
// ["a", "b"]: its two tokens and its length.
func scanPlainMerge(b []byte) (left, right []byte, n int, ok bool) {
	if len(b) > 0 && b[0] == '"' {
		line, next, ok := scanPlainString(b, 0)
		if !ok {
			return nil, nil, 0, false
		}
		left, right, ok = bytes.Cut(line, []byte{' '})
		if !ok || len(left) == 0 || len(right) == 0 || bytes.IndexByte(right, ' ') >= 0 {
			return nil, nil, 0, false
		}
		return left, right, next, true
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, nil, 0, false
	}
	left, i, ok := scanPlainString(b, skipJSONSpace(b, 1))
	if !ok || len(left) == 0 {
		return nil, nil, 0, false
	}
	if i = skipJSONSpace(b, i); i >= len(b) || b[i] != ',' {
		return nil, nil, 0, false
	}
	right, i, ok = scanPlainString(b, skipJSONSpace(b, i+1))
	if !ok || len(right) == 0 {
		return nil, nil, 0, false
	}
	if i = skipJSONSpace(b, i); i >= len(b) || b[i] != ']' {
		return nil, nil, 0, false
	}
	return left, right, i + 1, true
}

// scanPlainEntry reads a plain vocabulary entry at the start of b,
// "token": id with id an integer of at most 18 digits and no leading zero,
// followed in b by a byte that ends a number: the token, its id and the
// entry's length.
func scanPlainEntry(b []byte) (name []byte, id int, n int, ok bool) {
	name, i, ok := scanPlainString(b, 0)
	if !ok {
		return nil, 0, 0, false
	}
	if i = skipJSONSpace(b, i); i >= len(b) || b[i] != ':' {
		return nil, 0, 0, false
	}
	start := skipJSONSpace(b, i+1)
	end := start
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	if end == len(b) || end == start || end-start > 18 || b[start] == '0' && end-start > 1 {
		return nil, 0, 0, false
	}
	switch b[end] {
	case ',', '}', ' ', '\n', '\r', '\t':
	default:
		return nil, 0, 0, false // a fraction, an exponent, or not a number
	}
	for _, c := range b[start:end] {
		id = id*10 + int(c-'0')
	}
	return name, id, end, true
}
