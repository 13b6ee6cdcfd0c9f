package escape

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// The characters that drive a terminal or reorder text, each with the
// escape both Text and Label give it.
var hostile = []struct{ in, want string }{
	{"\x1b]0;title\a", `\x1b]0;title\x07`}, // OSC, closed by BEL
	{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},     // CSI erase, cursor home
	{"a\rb\bc", `a\x0db\x08c`},             // CR and BS overwrite
	{"\x7f", `\x7f`},                       // DEL
	{"\u009b31m", `\u009b31m`},             // 8-bit CSI
	{"\u009d0;x\u009c", `\u009d0;x\u009c`}, // 8-bit OSC ... ST
	{"\u0090q\u009c", `\u0090q\u009c`},     // DCS ... ST
	{"\u0085", `\u0085`},                   // NEL
	{"abc\u202edcba", `abc\u202edcba`},     // right-to-left override
	{"\u2066x\u2069", `\u2066x\u2069`},     // isolate
	{"\u200fx\u200e", `\u200fx\u200e`},     // RLM, LRM
	{"zero\u200bwidth", `zero\u200bwidth`}, // zero-width space
	{"\ufeffbom", `\ufeffbom`},             // byte-order mark
	{"tag\U000e0041", `tag\U000e0041`},     // tag character
	{"line\u2028sep", `line\u2028sep`},     // line separator
	{"bad\xffbyte", `bad\xffbyte`},         // not UTF-8
	{"cut\xe2\x80", `cut\xe2\x80`},         // a truncated sequence
}

// Text that must pass unchanged: printable characters of many scripts,
// emoji, combining marks, a backslash.
var plain = []string{"", "func main() {", "naïve café", "日本語のテキスト", "Ωμέγα", "مرحبا", "🙂👍", "e\u0301", `C:\path\n`, "\u00a0nbsp"}

func TestTextAndLabel(t *testing.T) {
	for _, c := range hostile {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Label(c.in); got != c.want {
			t.Errorf("Label(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, s := range plain {
		if Text(s) != s || Label(s) != s {
			t.Errorf("%q changed: Text %q, Label %q", s, Text(s), Label(s))
		}
	}
	if got, want := Text("a\tb\nc"), "a\tb\nc"; got != want {
		t.Errorf("Text keeps layout: got %q, want %q", got, want)
	}
	if got, want := Label("a\tb\nc"), `a\tb\nc`; got != want {
		t.Errorf("Label escapes layout: got %q, want %q", got, want)
	}
}

// TestLabels: each string as Label writes it, in a new slice (the input is
// unchanged), and nil stays nil while empty stays empty.
func TestLabels(t *testing.T) {
	in := []string{"a\tb", "\x1b[2J", "plain"}
	got := Labels(in)
	if want := []string{`a\tb`, `\x1b[2J`, "plain"}; !slices.Equal(got, want) {
		t.Errorf("Labels(%q) = %q, want %q", in, got, want)
	}
	if in[0] != "a\tb" {
		t.Errorf("Labels changed its input to %q", in)
	}
	if Labels(nil) != nil || Labels([]string{}) == nil {
		t.Errorf("Labels(nil) = %#v, Labels([]string{}) = %#v; want nil and empty", Labels(nil), Labels([]string{}))
	}
}

// TestNothingUnsafeSurvives: over every code point and every byte, the
// output of Text and Label holds no C0 (but newline and tab in Text), DEL,
// C1 or format character, and is valid UTF-8. The reference is the
// Unicode ranges written out, not Unsafe.
func TestNothingUnsafeSurvives(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) {
			all.WriteRune(r)
		}
	}
	for b := 0x80; b <= 0xff; b++ {
		all.WriteByte(byte(b))
	}
	for name, out := range map[string]string{"Text": Text(all.String()), "Label": Label(all.String())} {
		if !utf8.ValidString(out) {
			t.Errorf("%s: output is not valid UTF-8", name)
		}
		for _, r := range out {
			if (r == '\n' || r == '\t') && name == "Text" {
				continue
			}
			if refUnsafe(r) {
				t.Fatalf("%s: U+%04X reached the output", name, r)
			}
		}
	}
}

// refUnsafe lists the unsafe ranges by hand (Unicode 15's Cf).
func refUnsafe(r rune) bool {
	ranges := [][2]rune{
		{0x00, 0x1f}, {0x7f, 0x9f}, {0xad, 0xad}, {0x600, 0x605}, {0x61c, 0x61c}, {0x6dd, 0x6dd},
		{0x70f, 0x70f}, {0x890, 0x891}, {0x8e2, 0x8e2}, {0x180e, 0x180e}, {0x200b, 0x200f},
		{0x2028, 0x202e}, {0x2060, 0x2064}, {0x2066, 0x206f}, {0xfeff, 0xfeff}, {0xfff9, 0xfffb},
		{0x110bd, 0x110bd}, {0x110cd, 0x110cd}, {0x13430, 0x1343f}, {0x1bca0, 0x1bca3},
		{0x1d173, 0x1d17a}, {0xe0001, 0xe0001}, {0xe0020, 0xe007f},
	}
	for _, rg := range ranges {
		if r >= rg[0] && r <= rg[1] {
			return true
		}
	}
	return false
}

// TestJSONRoundTrips: a document holding every code point decodes to the
// same strings after JSON, and holds no unsafe character raw.
func TestJSONRoundTrips(t *testing.T) {
	var values []string
	var chunk []rune
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		chunk = append(chunk, r)
		if len(chunk) == 512 {
			values = append(values, string(chunk))
			chunk = chunk[:0]
		}
	}
	values = append(values, string(chunk))
	for _, c := range hostile {
		values = append(values, strings.ToValidUTF8(c.in, "\ufffd"))
	}
	doc, err := json.Marshal(map[string][]string{"tokens": values})
	if err != nil {
		t.Fatal(err)
	}
	clean := JSON(doc)
	for _, r := range string(clean) {
		if refUnsafe(r) {
			t.Fatalf("U+%04X is raw in the JSON", r)
		}
	}
	var back map[string][]string
	if err := json.Unmarshal(clean, &back); err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		if back["tokens"][i] != v {
			t.Fatalf("value %d did not round-trip", i)
		}
	}
	if plainDoc := []byte(`{"a":"café 🙂"}`); &JSON(plainDoc)[0] != &plainDoc[0] {
		t.Error("a clean document was copied")
	}
}
