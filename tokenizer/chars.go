package tokenizer

import (
	"fmt"
	"unicode/utf8"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/pkg/errors"
)

// chars is a character tokenizer: id i is the character itos[i], as a
// nanoGPT character model's meta.pkl lists them.
type chars struct {
	itos []string
	stoi map[rune]int
}

// NewChars is the tokenizer of a character model whose id i is itos[i].
// Each entry must be one character (UTF-8), and no character may appear
// twice.
func NewChars(itos []string) (Tokenizer, error) {
	if len(itos) == 0 {
		return nil, errors.New("character vocabulary: it is empty")
	}
	t := &chars{itos: append([]string(nil), itos...), stoi: make(map[rune]int, len(itos))}
	for id, s := range itos {
		r, size := utf8.DecodeRuneInString(s)
		if s == "" || size != len(s) || r == utf8.RuneError && size == 1 {
			return nil, errors.Errorf("character vocabulary: id %d is %s: want one character", id, msg.Quote(s))
		}
		if first, dup := t.stoi[r]; dup {
			return nil, errors.Errorf("character vocabulary: %s is both id %d and id %d", msg.Quote(s), first, id)
		}
		t.stoi[r] = id
	}
	return t, nil
}

// IsChars reports whether t (or the tokenizer it wraps) is a character
// tokenizer (NewChars), whose every token is one character.
func IsChars(t Tokenizer) bool {
	_, ok := unwrap(t).(*chars)
	return ok
}

// Encode maps each character to its id; a character the vocabulary lacks,
// or a byte that is not UTF-8, is an error naming it and where it is.
func (t *chars) Encode(text string) ([]int, error) {
	ids := make([]int, 0, len(text))
	for at, r := range text {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(text[at:]); size == 1 {
				return nil, errors.Errorf("byte 0x%02x at byte %d is not UTF-8", text[at], at)
			}
		}
		id, ok := t.stoi[r]
		if !ok {
			return nil, errors.Errorf("character %s at byte %d is not in the model's vocabulary of %d characters", msg.Quote(string(r)), at, len(t.itos))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Token is id's character, nil for an id outside [0, Size()).
func (t *chars) Token(id int) []byte {
	if id < 0 || id >= len(t.itos) {
		return nil
	}
	return []byte(t.itos[id])
}

func (t *chars) Size() int    { return len(t.itos) }
func (t *chars) EOS() int     { return -1 }
func (t *chars) BOS() int     { return -1 }
func (t *chars) Name() string { return fmt.Sprintf("characters (%d tokens)", len(t.itos)) }
