package tokenizer

import "unicode/utf8"

// Tokenizer turns text into token ids and ids into bytes.
type Tokenizer interface {
	// Encode splits text into token ids. Special tokens' names written in
	// the text ("<|endoftext|>") are ordinary text, as GPT-2's encoder
	// treats them; give their ids directly to feed one.
	Encode(text string) ([]int, error)
	// Token is the bytes of one id's token; a special token's are its name.
	Token(id int) []byte
	// Size is how many ids there are.
	Size() int
	// EOS and BOS are the end- and beginning-of-text ids, -1 for none.
	EOS() int
	BOS() int
	// Name says what the tokenizer is, for a model card: "GPT-2 byte-level
	// BPE (50257 tokens)".
	Name() string
}

// Decode is the bytes of ids, one token after another.
func Decode(t Tokenizer, ids []int) []byte {
	var out []byte
	for _, id := range ids {
		out = append(out, t.Token(id)...)
	}
	return out
}

// Stream writes ids as text as they come: the bytes of a character split
// across tokens are held until it is whole.
type Stream struct {
	tok     Tokenizer
	pending []byte
}

// NewStream starts a stream of t's tokens.
func NewStream(t Tokenizer) *Stream { return &Stream{tok: t} }

// Push adds one id and returns the text that is now complete: every whole
// character, and bytes that can no longer start or continue one.
func (s *Stream) Push(id int) []byte {
	s.pending = append(s.pending, s.tok.Token(id)...)
	n := completePrefix(s.pending)
	out := append([]byte(nil), s.pending[:n]...)
	s.pending = append(s.pending[:0], s.pending[n:]...)
	return out
}

// Flush returns what is held, whole or not (at the end of a text).
func (s *Stream) Flush() []byte {
	out := s.pending
	s.pending = nil
	return out
}

// completePrefix is how many leading bytes of b can be written now: b less
// a trailing start of a character that more bytes could still complete.
func completePrefix(b []byte) int {
	for back := 1; back < utf8.UTFMax && back <= len(b); back++ {
		i := len(b) - back
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			return len(b)
		}
	}
	return len(b)
}
