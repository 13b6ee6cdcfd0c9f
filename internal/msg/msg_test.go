package msg

import (
	"strings"
	"testing"
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
