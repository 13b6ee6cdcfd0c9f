package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE (Llama 2, Mistral, TinyLlama) writes a space as
// "▁" in its vocabulary and puts one before the text, so that a word
// spells the same at the start as after a space; a character the
// vocabulary lacks is its UTF-8 bytes' tokens, <0x00> to <0xFF>.
const metaspace = "▁"

// fallbackName is byte b's token: <0x0A>.
func fallbackName(b byte) string { return fmt.Sprintf("<0x%02X>", b) }

// fallbackByte reads a byte's token, as Hugging Face's ByteFallback
// decoder does (either case of hex digits).
func fallbackByte(name string) (byte, bool) {
	if len(name) != 6 || !strings.HasPrefix(name, "<0x") || name[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(name[3:5], 16, 8)
	return byte(v), err == nil
}

// prependScheme is when the Metaspace pre-tokenizer puts "▁" first.
type prependScheme string

const (
	prependAlways prependScheme = "always" // every stretch of text
	prependFirst  prependScheme = "first"  // only the stretch that starts the text
	prependNever  prependScheme = "never"
)

// metaspaceRewrite is the Metaspace pre-tokenizer's rewriting of a split:
// every space becomes "▁", and "▁" goes first, as scheme says, unless the
// split starts with one already.
func metaspaceRewrite(scheme prependScheme) func(s string, start bool) string {
	return func(s string, start bool) string {
		s = strings.ReplaceAll(s, " ", metaspace)
		prepend := scheme == prependAlways || scheme == prependFirst && start
		if prepend && !strings.HasPrefix(s, metaspace) {
			s = metaspace + s
		}
		return s
	}
}

// metaspacePieceLen is the Metaspace pre-tokenizer's split: each "▁" starts
// a piece (it merges with what follows it).
func metaspacePieceLen(s string) int {
	_, first := utf8.DecodeRuneInString(s)
	if i := strings.Index(s[first:], metaspace); i >= 0 {
		return first + i
	}
	return len(s)
}
