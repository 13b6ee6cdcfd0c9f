package tokenizer

import (
	"bytes"
	"testing"
)

// byteTokens is a tokenizer whose id i is the byte i: every character of
// more than one byte is split across tokens.
type byteTokens struct{}

func (byteTokens) Encode(text string) ([]int, error) {
	ids := make([]int, len(text))
	for i := range len(text) {
		ids[i] = int(text[i])
	}
	return ids, nil
}
func (byteTokens) Token(id int) []byte { return []byte{byte(id)} }
func (byteTokens) Size() int           { return 256 }
func (byteTokens) EOS() int            { return -1 }
func (byteTokens) BOS() int            { return -1 }
func (byteTokens) Name() string        { return "bytes" }

// TestStreamHoldsSplitCharacters: fed a byte at a time, a Stream writes
// each character only once it is whole (never a part of one), writes
// bytes that cannot be part of a character as they come, and its output
// joined with Flush is the input exactly.
func TestStreamHoldsSplitCharacters(t *testing.T) {
	for _, text := range []string{"héllo 世界 😀!", "a\xffb\xe4\xb8", "\xf0\x9f\x98"} {
		ids, _ := byteTokens{}.Encode(text)
		s := NewStream(byteTokens{})
		var got []byte
		for i, id := range ids {
			out := s.Push(id)
			if n := completePrefix(out); n != len(out) {
				t.Errorf("%q: after byte %d the stream wrote %q, which ends in part of a character", text, i, out)
			}
			got = append(got, out...)
		}
		got = append(got, s.Flush()...)
		if !bytes.Equal(got, []byte(text)) {
			t.Errorf("stream of %q wrote %q", text, got)
		}
		if d := Decode(byteTokens{}, ids); !bytes.Equal(d, []byte(text)) {
			t.Errorf("Decode of %q gave %q", text, d)
		}
	}
	s := NewStream(byteTokens{})
	if out := s.Push(0xe4); len(out) != 0 {
		t.Errorf("the first byte of 世 was written at once: %q", out)
	}
	if out := s.Push(0xb8); len(out) != 0 {
		t.Errorf("two bytes of 世 were written: %q", out)
	}
	if out := s.Push(0x96); string(out) != "世" {
		t.Errorf("the third byte of 世 wrote %q, want the character", out)
	}
	if out := s.Push('x'); string(out) != "x" {
		t.Errorf("an ASCII byte wrote %q", out)
	}
}

// TestIDs: a model without tokenizer files prints its tokens as ids and
// refuses text.
func TestIDs(t *testing.T) {
	tok := IDs(50)
	if string(tok.Token(7)) != "<7>" || tok.Size() != 50 || tok.EOS() != -1 || tok.BOS() != -1 {
		t.Errorf("IDs(50): token 7 %q, size %d, EOS %d, BOS %d", tok.Token(7), tok.Size(), tok.EOS(), tok.BOS())
	}
	if _, err := tok.Encode("hi"); err != ErrNoTokenizer {
		t.Errorf("Encode: %v, want ErrNoTokenizer", err)
	}
}
