package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
)

// TestParseTokens pins the accepted spellings.
func TestParseTokens(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"", nil},
		{"   ", nil},
		{"5 2 7", []int{5, 2, 7}},
		{"5,2,,7", []int{5, 2, 7}},
		{" 5\t2\r\n7 ", []int{5, 2, 7}},
		{"+3 007 -0", []int{3, 7, 0}},
		{"1 SEP 1 sep", []int{1, 16, 1, 16}},
	} {
		got, err := ParseTokens(c.in, map[string]int{"SEP": 16})
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("ParseTokens(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// FuzzParseTokens: no input panics the -tokens parser; an error is one short
// line about -tokens; accepted ids print back to a string that parses to the
// same ids, one per non-empty field.
func FuzzParseTokens(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseTokens(s, map[string]int{"SEP": 16})
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "-tokens") || strings.ContainsAny(msg, "\n\r") || len(msg) > 200 {
				t.Fatalf("ParseTokens(%q): bad message %q", s, msg)
			}
			return
		}
		fields := strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(", \t\n\r", r) })
		if len(ids) != len(fields) {
			t.Fatalf("ParseTokens(%q) = %v from %d fields", s, ids, len(fields))
		}
		printed := strings.Trim(fmt.Sprint(ids), "[]")
		again, err := ParseTokens(printed, nil)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(ids) {
			t.Fatalf("ParseTokens(%q) = %v, but %q parses to %v, %v", s, ids, printed, again, err)
		}
	})
}

// TestTokensErrorIsSafe: the -tokens error of a text model, whose token
// names are its characters, lists the names and quotes the bad token as
// visible escapes, never a control, C1 or bidi character raw.
func TestTokensErrorIsSafe(t *testing.T) {
	names := map[string]int{"\n": 0, "\t": 1, "A": 2}
	for i, r := range escapetest.Hostile {
		names[string(r)] = 3 + i
	}
	for _, bad := range []string{"zz", "\u202ex", "\x1b[2J", "\u009b1m", "\ufeffx"} {
		_, err := ParseTokens(bad, names)
		if err == nil {
			t.Fatalf("ParseTokens(%q) accepted", bad)
		}
		msg := err.Error()
		escapetest.Check(t, fmt.Sprintf("ParseTokens(%q)", bad), []byte(msg), "")
		for _, want := range []string{`\x1b`, `\u009b`, `\u202e`, `\ufeff`, `\n`, "(A, "} {
			if !strings.Contains(msg, want) {
				t.Errorf("ParseTokens(%q): the names listed in %q lack %s", bad, msg, want)
			}
		}
	}
}

// TestTokensErrorIsShort: a vocabulary of thousands of names lists the
// first few and counts the rest, so the refusal stays one short line.
func TestTokensErrorIsShort(t *testing.T) {
	names := map[string]int{}
	for i := range 5000 {
		names[string(rune(0x4e00+i))] = i
	}
	_, err := ParseTokens("zz", names)
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), ", and 4976 more)") {
		t.Errorf("error %.400v", err)
	}
}
