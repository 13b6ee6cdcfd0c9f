package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// gpt2PieceLen is GPT-2's pre-tokenizer: the length in bytes of the piece
// at the start of s (not empty), each piece encoded on its own. GPT-2
// defines the pieces by a regular expression run with Python's regex
// module,
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// which Go's regexp cannot run (it has no lookahead), so this follows it by
// hand: the first alternative that matches at the start of s. Python's \s
// is Unicode's White_Space, as unicode.IsSpace is. A byte that is not UTF-8
// counts as a character that is neither letter, number nor space, so every
// input is split and no byte is lost.
func gpt2PieceLen(s string) int {
	for _, c := range gpt2Contractions {
		if strings.HasPrefix(s, c) {
			return len(c)
		}
	}
	first, size := utf8.DecodeRuneInString(s)
	class := classOf(first)
	if first == ' ' && size < len(s) {
		// " ?\p{L}+" and its kin take a space that leads a run of letters,
		// numbers or other characters.
		if next, _ := utf8.DecodeRuneInString(s[size:]); classOf(next) != classSpace {
			return size + runLen(s[size:], classOf(next))
		}
	}
	if class != classSpace {
		return runLen(s, class)
	}
	return spaceRunPiece(s)
}

// gpt2Contractions are the pattern's first alternatives, tried in its order.
var gpt2Contractions = []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"}

// charClass is which of the pattern's classes a character is in.
type charClass int

const (
	classLetter charClass = iota // \p{L}
	classNumber                  // \p{N}
	classSpace                   // \s
	classOther                   // [^\s\p{L}\p{N}]
)

func classOf(r rune) charClass {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classNumber
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}

// spaceRunPiece is the piece a run of whitespace at the start of s makes.
// "\s+(?!\S)" takes the whole run at the end of the text, else the run less
// its last character, which is left to lead what follows (a space joins the
// next word; any other whitespace becomes a piece of its own); a run of one
// character before a non-space falls through to "\s+" and is that character.
func spaceRunPiece(s string) int {
	n := runLen(s, classSpace)
	if n == len(s) {
		return n
	}
	_, last := utf8.DecodeLastRuneInString(s[:n])
	if n > last {
		return n - last
	}
	return n
}

// runLen is the length in bytes of the run of characters of class at the
// start of s.
func runLen(s string, class charClass) int {
	n := 0
	for n < len(s) {
		r, size := utf8.DecodeRuneInString(s[n:])
		if classOf(r) != class {
			break
		}
		n += size
	}
	return n
}
