package msg

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
)

// TestShortened: values up to MaxShown bytes are shown whole; longer ones
// (issue 11: a 100,000-digit seed gave a 100 KB error line) are cut at a
// character boundary and say how long they were; a quoted value shows at
// most MaxShown characters between its quotes, escapes counted.
func TestShortened(t *testing.T) {
	long := strings.Repeat("9", 100_000)
	cases := []struct{ in, quote, clean string }{
		{"copy", `"copy"`, "copy"},
		{"a\nb", `"a\nb"`, `"a\nb"`},
		{"", `""`, ""},
		{strings.Repeat("x", 80), `"` + strings.Repeat("x", 80) + `"`, strings.Repeat("x", 80)},
		{long, `"` + long[:80] + `"... (100000 bytes)`, long[:80] + "... (100000 bytes)"},
		// é is two bytes: the cut backs off to before the one that straddles 80.
		{strings.Repeat("x", 79) + strings.Repeat("é", 10), `"` + strings.Repeat("x", 79) + `"... (99 bytes)`, strings.Repeat("x", 79) + "... (99 bytes)"},
		// The quoted part stays within MaxShown characters, escapes counted.
		{"\n" + long, `"\n` + long[:78] + `"... (100001 bytes)`, `"\n` + long[:78] + `"... (100001 bytes)`},
		{strings.Repeat("\x11", 40), `"` + strings.Repeat(`\x11`, 20) + `"... (40 bytes)`, `"` + strings.Repeat(`\x11`, 20) + `"... (40 bytes)`},
	}
	for _, c := range cases {
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%.20q...) = %.120s, want %.120s", c.in, got, c.quote)
		}
		if got := Clean(c.in); got != c.clean {
			t.Errorf("Clean(%.20q...) = %.120s, want %.120s", c.in, got, c.clean)
		}
	}
}

// TestShorten: the values another package's message quotes whole (the flag
// package's "invalid value" and "not defined") are shortened; the rest of the
// message is kept.
func TestShorten(t *testing.T) {
	long := strings.Repeat("9", 1000)
	cases := []struct{ in, want string }{
		{`invalid value "many" for flag -samples: parse error`, `invalid value "many" for flag -samples: parse error`},
		{`invalid value "` + long + `" for flag -seed: value out of range`, `invalid value "` + long[:80] + `"... (1000 bytes) for flag -seed: value out of range`},
		{"flag provided but not defined: -" + long, "flag provided but not defined: -" + long[:79] + "... (1001 bytes)"},
	}
	for _, c := range cases {
		if got := Shorten(c.in); got != c.want {
			t.Errorf("Shorten(%.40q...) = %.200s, want %.200s", c.in, got, c.want)
		}
	}
}

// TestNothingUnsafeSurvives: whatever a file holds, Quote, Clean and
// Shorten write no character a terminal acts on or a renderer reorders
// (escapetest: C0, DEL, C1, format characters, U+2028/9) and no invalid
// UTF-8, over every code point and every byte that is not UTF-8, alone
// and inside a JSON value as a message shows it (issue 42: a bidi override,
// NEL or DEL in config.json reached the terminal through Shorten).
func TestNothingUnsafeSurvives(t *testing.T) {
	var out strings.Builder
	add := func(s string) {
		for _, shown := range []string{Quote(s), Clean(s), Shorten(s), Shorten(`n_head = "` + s + `": want a positive integer`)} {
			out.WriteString(shown)
			out.WriteByte(' ')
		}
	}
	var chunk []rune // 16 code points: at most 64 bytes, shown whole
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) {
			chunk = append(chunk, r)
		}
		if len(chunk) == 16 || r == utf8.MaxRune {
			add(string(chunk))
			chunk = chunk[:0]
		}
	}
	for b := 0x80; b <= 0xff; b++ {
		add("a" + string([]byte{byte(b)}) + "b")
	}
	escapetest.Check(t, "Quote, Clean and Shorten", []byte(out.String()), "")
}

// TestShortenEscapes: Shorten writes the unsafe characters of a message as
// escape.Label does, and keeps the rest, quoted values included.
func TestShortenEscapes(t *testing.T) {
	cases := []struct{ in, want string }{
		{"n_head = \"\u202efour\u0085\x7f\": want a positive integer", `n_head = "\u202efour\u0085\x7f": want a positive integer`},
		{"data_offsets [\n1]: bad\u2028", `data_offsets [\n1]: bad\u2028`},
		{"title \x1b]0;pwned\a\x1b[2J", `title \x1b]0;pwned\x07\x1b[2J`},
		{"bad \xff byte", `bad \xff byte`},
		{`already "quoted\x1b" naïve`, `already "quoted\x1b" naïve`},
	}
	for _, c := range cases {
		if got := Shorten(c.in); got != c.want {
			t.Errorf("Shorten(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
