package cli

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
)

// textNames are a character-level model's names: its characters, a space
// as "␣", a digit and a comma among them.
var textNames = TokenNames{Names: map[string]int{"\n": 0, "␣": 1, ",": 2, "3": 3, "I": 4, "K": 5, "a": 6, "i": 7, "k": 8, "ı": 9, "#": 10}, Characters: true}

// toyNames are a toy task's: SEP beside its numbered symbols.
var toyNames = TokenNames{Names: map[string]int{"SEP": 16}}

// TestParseTokens pins the accepted spellings: a toy task's ids and SEP in
// any case; a text model's characters exactly as typed (case kept, a digit
// and a comma are characters, the newline by its escape), #N an id on both.
func TestParseTokens(t *testing.T) {
	for _, c := range []struct {
		in    string
		names TokenNames
		want  []int
	}{
		{"", toyNames, nil},
		{"   ", toyNames, nil},
		{"5 2 7", toyNames, []int{5, 2, 7}},
		{"5,2,,7", toyNames, []int{5, 2, 7}},
		{" 5\t2\r\n7 ", toyNames, []int{5, 2, 7}},
		{"+3 007 -0", toyNames, []int{3, 7, 0}},
		{"1 SEP 1 sep Sep", toyNames, []int{1, 16, 1, 16, 16}},
		{"#5 #16", toyNames, []int{5, 16}},
		{"k i I K a", textNames, []int{8, 7, 4, 5, 6}},
		{"ı i", textNames, []int{9, 7}},
		{"3 , a", textNames, []int{3, 2, 6}},
		{`\n ␣ #`, textNames, []int{0, 1, 10}},
		{"#3 #12 3", textNames, []int{3, 12, 3}},
		{"<|endoftext|> <|ENDOFTEXT|> 7", TokenNames{Names: map[string]int{"<|endoftext|>": 50256}}, []int{50256, 50256, 7}},
	} {
		got, err := ParseTokens(c.in, c.names)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("ParseTokens(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
}

// TestParseTokensRefused: a text model's tokens are its characters, so a
// character in another case, a number that is no character and a word are
// refused, the error listing the characters as they are and saying how to
// give an id; a folded name that two names spell is refused too.
func TestParseTokensRefused(t *testing.T) {
	for _, c := range []struct {
		in    string
		names TokenNames
		want  string
	}{
		{"A", textNames, `-tokens: "A" (token 0) is not a character of the model's 11 characters (# , 3 I K \n a i k ı ␣); give an id as #N, or text with -text`},
		{"k 12", textNames, `-tokens: "12" (token 1) is not a character of the model; give an id as #12, or text with -text`},
		{"ki", textNames, `"ki" (token 0) is not a character`},
		{"a,a", textNames, `"a,a" (token 0) is not a character`}, // a comma is a character here, not a separator
		{"four", toyNames, `-tokens: "four" (token 0) is not a number or a token name (SEP)`},
		{"ab", TokenNames{Names: map[string]int{"AB": 1, "Ab": 2}}, `"ab" (token 0) is not a number or a token name (AB, Ab)`},
		{"#99999999999999999999", toyNames, `is too large to be a token id`},
		{"99999999999999999999", toyNames, `is too large to be a token id`},
	} {
		_, err := ParseTokens(c.in, c.names)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTokens(%q) = %v; want %q", c.in, err, c.want)
		}
	}
}

// FuzzParseTokens: no input panics the -tokens parser; an error is one short
// line about -tokens; accepted ids print back to a string that parses to the
// same ids, one per non-empty field.
func FuzzParseTokens(f *testing.F) {
	for _, seed := range []string{"1 2,SEP", "\f", "#3\u00a0sep"} { // \f and NBSP are whitespace too
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseTokens(s, toyNames)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "-tokens") || strings.ContainsAny(msg, "\n\r") || len(msg) > 200 {
				t.Fatalf("ParseTokens(%q): bad message %q", s, msg)
			}
			return
		}
		fields := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ',' })
		if len(ids) != len(fields) {
			t.Fatalf("ParseTokens(%q) = %v from %d fields", s, ids, len(fields))
		}
		printed := strings.Trim(fmt.Sprint(ids), "[]")
		again, err := ParseTokens(printed, TokenNames{})
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
		_, err := ParseTokens(bad, TokenNames{Names: names, Characters: true})
		if err == nil {
			t.Fatalf("ParseTokens(%q) accepted", bad)
		}
		msg := err.Error()
		escapetest.Check(t, fmt.Sprintf("ParseTokens(%q)", bad), []byte(msg), "")
		for _, want := range []string{`\x1b`, `\u009b`, `\u202e`, `\ufeff`, `\n`, "(A "} {
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
	_, err := ParseTokens("zz", TokenNames{Names: names})
	if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), ", and 4976 more)") {
		t.Errorf("error %.400v", err)
	}
}
