package msg

import (
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/escape"
)

// MaxShown is the most bytes of a value a message shows.
const MaxShown = 80

// Quote returns s quoted in Go syntax, shortened past MaxShown bytes as
// "\"first 80 bytes\"... (100000 bytes)", and to fewer bytes when their
// escapes (\x1b, \u202e) would make the quoted part longer than MaxShown.
func Quote(s string) string {
	head, more := cut(s)
	q := strconv.Quote(head)
	for len(q) > MaxShown+2 {
		_, size := utf8.DecodeLastRuneInString(head)
		head = head[:len(head)-size]
		q, more = strconv.Quote(head), "... ("+strconv.Itoa(len(s))+" bytes)"
	}
	return q + more
}

// Clean returns s as it is when it is short and holds nothing that needs
// quoting (a newline, a control or format character, invalid UTF-8: every
// character escape.Unsafe names among them), else Quote(s);
// past MaxShown bytes a plain s is shortened like Quote's, without quotes.
func Clean(s string) string {
	head, more := cut(s)
	if q := strconv.Quote(head); q[1:len(q)-1] != head {
		return Quote(s)
	}
	return head + more
}

// cut splits a long s into its first MaxShown bytes (fewer, to end on a
// character boundary) and the suffix saying how long it was.
func cut(s string) (head, more string) {
	if len(s) <= MaxShown {
		return s, ""
	}
	n := MaxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// quoted matches a Go-quoted string in a message.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// word matches a run of characters without spaces or quotes.
var word = regexp.MustCompile(`[^\s"]+`)

// Shorten shortens every quoted string and every word of text longer than
// MaxShown bytes, for a message made by other code (the flag package quotes a
// bad value whole: `invalid value "..." for flag -seed`) or a fragment of a
// file shown as it is written (a JSON value). It first writes every
// character escape.Unsafe names as escape.Label does (\x1b, \u202e, \n), so
// what it returns is one line holding nothing a terminal acts on.
func Shorten(text string) string {
	text = quoted.ReplaceAllStringFunc(escape.Label(text), func(q string) string {
		s, err := strconv.Unquote(q)
		if err != nil || len(s) <= MaxShown {
			return q
		}
		return Quote(s)
	})
	return word.ReplaceAllStringFunc(text, func(w string) string {
		if len(w) <= MaxShown {
			return w
		}
		head, more := cut(w)
		return head + more
	})
}
