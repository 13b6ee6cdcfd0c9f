package escape

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unsafe reports whether r must not reach a terminal or a page as it is (see
// the package conventions). Newline and tab are unsafe here; Text lets them
// through.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0xa0:
		return false
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// Text returns model text with every unsafe character escaped but newline
// and tab, which lay the text out.
func Text(s string) string { return escape(s, true) }

// Label returns s for one cell of a table or an axis: every unsafe
// character escaped, newline and tab as \n and \t.
func Label(s string) string { return escape(s, false) }

// Labels is ss with every string escaped by Label, in a new slice; nil
// stays nil (a view tells a missing list from an empty one).
func Labels(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Label(s)
	}
	return out
}

func escape(s string, keepLayout bool) string {
	if safe(s, keepLayout) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// safe reports whether escape would return s unchanged, without allocating.
func safe(s string, keepLayout bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return false
		}
		if Unsafe(r) && !(keepLayout && (r == '\n' || r == '\t')) {
			return false
		}
		i += size
	}
	return true
}

// JSON rewrites the unsafe characters that encoding/json writes raw (DEL,
// C1 controls, format characters) as \u escapes, surrogate pairs above
// U+FFFF. doc must be JSON as encoding/json writes it: valid UTF-8, C0
// controls already escaped. Outside strings JSON holds only ASCII, so every
// such character is inside a string and the document decodes to the same
// values.
func JSON(doc []byte) []byte {
	clean := true
	for i := 0; i < len(doc); {
		r, size := utf8.DecodeRune(doc[i:])
		if r == 0x7f || (r >= 0x80 && Unsafe(r)) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return doc
	}
	out := make([]byte, 0, len(doc)+32)
	for i := 0; i < len(doc); {
		r, size := utf8.DecodeRune(doc[i:])
		switch {
		case r == 0x7f || (r >= 0x80 && Unsafe(r)) && r <= 0xffff:
			out = fmt.Appendf(out, `\u%04x`, r)
		case r >= 0x80 && Unsafe(r):
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		default:
			out = append(out, doc[i:i+size]...)
		}
		i += size
	}
	return out
}
