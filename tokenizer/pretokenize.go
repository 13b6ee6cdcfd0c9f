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

// The pre-tokenizer patterns of Llama 3's and Qwen 2's tokenizer.json
// (a Split with this Regex, then ByteLevel without its own), exactly as the
// files write them. They differ only in how many digits make a piece.
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// handSplits are the Split patterns written by hand, each with its name and its
// pre-tokenizer written by hand (Go's regexp has no lookahead).
var handSplits = map[string]struct {
	name     string
	pieceLen func(s string) int
}{
	llama3Pattern: {"Llama 3's", func(s string) int { return llama3PieceLen(s, 3) }},
	qwen2Pattern:  {"Qwen 2's", func(s string) int { return llama3PieceLen(s, 1) }},
}

// llama3PieceLen is the length of the first piece of s under Llama 3's
// pattern, whose \p{N}{1,3} is \p{N}{1,maxDigits} here: the first
// alternative that matches at the start of s, as the regex engine tries
// them.
func llama3PieceLen(s string, maxDigits int) int {
	if n := contractionLen(s); n > 0 {
		return n // (?i:'s|'t|'re|'ve|'m|'ll|'d)
	}
	first, size := utf8.DecodeRuneInString(s)
	class := classOf(first)
	next := classSpace // the class of the character after the first, if any
	if size < len(s) {
		r, _ := utf8.DecodeRuneInString(s[size:])
		next = classOf(r)
	}
	switch {
	case class == classLetter: // [^\r\n\p{L}\p{N}]?\p{L}+, without the first part
		return runLen(s, classLetter)
	case class != classNumber && !isLineEnd(first) && next == classLetter: // with it
		return size + runLen(s[size:], classLetter)
	case class == classNumber: // \p{N}{1,3}
		return numberRunLen(s, maxDigits)
	case class == classOther || first == ' ' && next == classOther: //  ?[^\s\p{L}\p{N}]+[\r\n]*
		start := 0
		if class == classSpace {
			start = size
		}
		n := start + runLen(s[start:], classOther)
		return n + lineEndRunLen(s[n:])
	}
	run := runLen(s, classSpace)
	if end := strings.LastIndexAny(s[:run], "\r\n"); end >= 0 {
		return end + 1 // \s*[\r\n]+: up to the run's last line end
	}
	return spaceRunPiece(s) // \s+(?!\S)|\s+
}

// contractionLen is the length of the contraction that starts s, 0 for
// none. (?i:...) folds ASCII letters only: "'ſ" is not "'s" (Oniguruma, as
// Hugging Face's tokenizers run it, agrees).
func contractionLen(s string) int {
	for _, c := range gpt2Contractions {
		if len(s) >= len(c) && strings.EqualFold(s[:len(c)], c) {
			return len(c)
		}
	}
	return 0
}

func isLineEnd(r rune) bool { return r == '\r' || r == '\n' }

// numberRunLen is the length of the run of at most max numbers starting s.
func numberRunLen(s string, max int) int {
	n := 0
	for count := 0; count < max && n < len(s); count++ {
		r, size := utf8.DecodeRuneInString(s[n:])
		if classOf(r) != classNumber {
			break
		}
		n += size
	}
	return n
}

// lineEndRunLen is the length of the run of \r and \n starting s.
func lineEndRunLen(s string) int {
	return len(s) - len(strings.TrimLeft(s, "\r\n"))
}
