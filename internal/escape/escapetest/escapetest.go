package escapetest

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/escape"
)

// Hostile are the characters a checkpoint's vocabulary may hold to take
// over a terminal or reorder what it shows: C0 controls (ESC, BEL, CR, BS),
// DEL, C1 controls (8-bit CSI, OSC, DCS, ST, NEL), bidi and format
// characters (right-to-left override, left-to-right isolate, right-to-left
// mark, zero-width space, byte-order mark, a tag character) and the line
// separator.
var Hostile = []rune{
	0x1b, 0x07, 0x0d, 0x08,
	0x7f,
	0x9b, 0x9d, 0x90, 0x9c, 0x85,
	0x202e, 0x2066, 0x200f, 0x200b, 0xfeff, 0xe0041,
	0x2028,
}

// hostile is Hostile as a string, for strings.ContainsRune.
var hostile = string(Hostile)

// Check reports, under what, invalid UTF-8 in out and the first character
// of out that is in Hostile or that escape.Unsafe names, but for those in
// layout: the newline and tab a format lays itself out with.
func Check(t testing.TB, what string, out []byte, layout string) {
	t.Helper()
	if !utf8.Valid(out) {
		t.Errorf("%s: the output is not UTF-8", what)
	}
	for i, r := range string(out) {
		if strings.ContainsRune(layout, r) {
			continue
		}
		if escape.Unsafe(r) || strings.ContainsRune(hostile, r) {
			t.Errorf("%s: U+%04X is raw at byte %d: %q", what, r, i, out[max(0, i-40):min(len(out), i+40)])
			return
		}
	}
}
