package tokenizer

import "unicode/utf8"

// Tokenizer turns text into token ids and ids into bytes.
type Tokenizer interface {
	// Encode splits text into token ids as the model reads a text: with
	// the beginning-of-text token first when its tokenizer.json's
	// post_processor puts it there (Llama 2, Mistral, TinyLlama, Llama 3's
	// newer files), as Hugging Face's tokenizers encode. Special tokens'
	// names written in the text are text for GPT-2, as its encoder treats
	// them, and the token itself for a tokenizer.json of another kind, as
	// Hugging Face's tokenizers match them.
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

// Wrapper is a Tokenizer that wraps another to change some of its answers
// (its BOS or EOS); Decode reads through it to the tokenizer's own
// decoder.
type Wrapper interface {
	Tokenizer
	Unwrap() Tokenizer
}

// Decode is the text of ids: their tokens' bytes one after another, less
// the leading space a SentencePiece tokenizer put before the text.
func Decode(t Tokenizer, ids []int) []byte {
	t = unwrap(t)
	if d, ok := t.(interface{ decode(ids []int) []byte }); ok {
		return d.decode(ids)
	}
	return joinTokens(t, ids)
}

// unwrap is the tokenizer t wraps (Wrapper), through every layer.
func unwrap(t Tokenizer) Tokenizer {
	for {
		w, ok := t.(Wrapper)
		if !ok {
			return t
		}
		t = w.Unwrap()
	}
}

// joinTokens is ids' tokens' bytes, one after another.
func joinTokens(t Tokenizer, ids []int) []byte {
	var out []byte
	for _, id := range ids {
		out = append(out, t.Token(id)...)
	}
	return out
}

// Stream writes ids as text as they come: the bytes of a character split
// across tokens are held until it is whole. A stream continues a text, so
// it keeps every space (Decode drops a SentencePiece text's first).
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
