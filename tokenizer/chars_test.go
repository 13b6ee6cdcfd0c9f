package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// shakespeareItos is a character vocabulary as nanoGPT's prepare.py writes
// one (sorted characters), with characters of two, three and four bytes and
// U+FFFD, which a byte that is not UTF-8 must not be taken for.
var shakespeareItos = []string{"\n", " ", "!", "'", "A", "a", "b", "c", "é", "\ufffd", "世", "😀"}

func newShakespeare(t *testing.T) Tokenizer {
	t.Helper()
	tok, err := NewChars(shakespeareItos)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestCharsEncode: each character is its index in itos; the ids decode to
// the text, including through a Stream; there is no EOS or BOS.
func TestCharsEncode(t *testing.T) {
	tok := newShakespeare(t)
	text := "A cab!\n世 😀é'"
	ids, err := tok.Encode(text)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{4, 1, 7, 5, 6, 2, 0, 10, 1, 11, 8, 3}
	if !slices.Equal(ids, want) {
		t.Errorf("%q encodes to %v, want %v", text, ids, want)
	}
	if d := string(Decode(tok, ids)); d != text {
		t.Errorf("decoded %q, want %q", d, text)
	}
	s := NewStream(tok)
	var streamed []byte
	for _, id := range ids {
		streamed = append(streamed, s.Push(id)...)
	}
	if string(streamed) != text || len(s.Flush()) != 0 {
		t.Errorf("a stream wrote %q, want %q", streamed, text)
	}
	if tok.Size() != 12 || tok.EOS() != -1 || tok.BOS() != -1 || tok.Name() != "characters (12 tokens)" {
		t.Errorf("size %d, EOS %d, BOS %d, name %q", tok.Size(), tok.EOS(), tok.BOS(), tok.Name())
	}
	if tok.Token(-1) != nil || tok.Token(12) != nil {
		t.Errorf("ids outside the vocabulary have bytes: %q, %q", tok.Token(-1), tok.Token(12))
	}
}

// TestCharsRoundTrip: random text over the vocabulary decodes back.
func TestCharsRoundTrip(t *testing.T) {
	tok := newShakespeare(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		var s strings.Builder
		for range rng.IntN(40) {
			s.WriteString(shakespeareItos[rng.IntN(len(shakespeareItos))])
		}
		checkRoundTrip(t, tok, s.String())
	}
}

// TestCharsEncodeRefused: a character outside the vocabulary, or a byte
// that is not UTF-8, is named (escaped) with its byte offset.
func TestCharsEncodeRefused(t *testing.T) {
	tok := newShakespeare(t)
	for _, c := range []struct{ text, want string }{
		{"ab\x1bc", `character "\x1b" at byte 2 is not in the model's vocabulary of ` + strconv.Itoa(len(shakespeareItos)) + " characters"},
		{"世z", `character "z" at byte 3`},
		{"a\u202eb", `character "\u202e" at byte 1`},
		{"a\xffb", "byte 0xff at byte 1 is not UTF-8"},
		{"é\xe4\xb8", "byte 0xe4 at byte 2 is not UTF-8"},
	} {
		_, err := tok.Encode(c.text)
		msgtest.Refusal(t, strconv.Quote(c.text), err, c.want)
	}
}

// TestNewCharsRefused: an itos that is empty, has an entry that is not one
// character, or a character twice is refused naming the id.
func TestNewCharsRefused(t *testing.T) {
	for _, c := range []struct {
		itos []string
		want string
	}{
		{nil, "it is empty"},
		{[]string{"a", "bc"}, `id 1 is "bc": want one character`},
		{[]string{""}, `id 0 is "": want one character`},
		{[]string{"a", "\xff"}, `id 1 is "\xff": want one character`},
		{[]string{"a", "b", "a"}, `"a" is both id 0 and id 2`},
	} {
		_, err := NewChars(c.itos)
		msgtest.Refusal(t, strconv.Quote(strings.Join(c.itos, ",")), err, "character vocabulary: ", c.want)
	}
}

// TestNewCharsCopies: changing the caller's slice after NewChars leaves
// the tokenizer as it was.
func TestNewCharsCopies(t *testing.T) {
	itos := []string{"a", "b"}
	tok, err := NewChars(itos)
	if err != nil {
		t.Fatal(err)
	}
	itos[0] = "z"
	if got := string(tok.Token(0)); got != "a" {
		t.Errorf("token 0 is %q after the caller changed its slice, want \"a\"", got)
	}
}
