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

// Payload is the string issue 42 reached a terminal with from config keys
// and values, shard and tensor names, header values and token strings: a
// title-setting OSC closed by BEL and a clear-screen CSI, a right-to-left
// override, NEL (C1), DEL and the line separator. It is valid UTF-8, so a
// JSON file keeps it as it is; a test adds "\xff" where a file may hold
// bytes that are not UTF-8.
const Payload = "\x1b]0;pwned\x07\x1b[2J\u202e\u0085\x7f\u2028"

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

// CheckRun reports, under what, what a command writes that a terminal
// would act on: an unsafe character in stdout or stderr (newline allowed,
// their line separator) or anywhere in err's message, which is one line.
func CheckRun(t testing.TB, what string, stdout, stderr []byte, err error) {
	t.Helper()
	Check(t, what+": stdout", stdout, "\n")
	Check(t, what+": stderr", stderr, "\n")
	if err != nil {
		Check(t, what+": the error", []byte(err.Error()), "")
	}
}
