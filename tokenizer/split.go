package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// preTokenizer cuts a split of normalized text into pieces, each merged by
// the model on its own: it calls yield with each piece in order, and at,
// the byte where the piece starts in the text (at == 0: it starts the
// text, which Metaspace's "first" asks). A piece is never empty.
type preTokenizer func(s string, at int, yield func(piece string, at int) error) error

// byPieceLen is the pre-tokenizer that cuts s by pieceLen, the length of
// the piece at the start of what is left (a hand-written pattern).
func byPieceLen(pieceLen func(string) int) preTokenizer {
	return func(s string, at int, yield func(string, int) error) error {
		for pos := 0; pos < len(s); {
			n := pieceLen(s[pos:])
			if err := yield(s[pos:pos+n], at+pos); err != nil {
				return err
			}
			pos += n
		}
		return nil
	}
}

// wholeSplit is no pre-tokenizer: the split is one piece.
func wholeSplit(s string, at int, yield func(string, int) error) error {
	if s == "" {
		return nil
	}
	return yield(s, at)
}

// chain is pre-tokenizer first, then next on each of its pieces, as a
// Sequence runs them.
func chain(first, next preTokenizer) preTokenizer {
	return func(s string, at int, yield func(string, int) error) error {
		return first(s, at, func(piece string, pieceAt int) error {
			return next(piece, pieceAt, yield)
		})
	}
}

// segment is a stretch of a split: [start, end) in bytes, and whether the
// pattern matched it.
type segment struct {
	start, end int
	match      bool
}

// splitBehavior is what Hugging Face's Split, Digits and Punctuation do
// with the stretches their pattern matches (SplitDelimiterBehavior).
type splitBehavior string

const (
	behaviorRemoved            splitBehavior = "Removed"
	behaviorIsolated           splitBehavior = "Isolated"
	behaviorMergedWithPrevious splitBehavior = "MergedWithPrevious"
	behaviorMergedWithNext     splitBehavior = "MergedWithNext"
	behaviorContiguous         splitBehavior = "Contiguous"
)

var splitBehaviors = []splitBehavior{behaviorRemoved, behaviorIsolated, behaviorMergedWithPrevious, behaviorMergedWithNext, behaviorContiguous}

// segments lists the stretches of a text of n bytes: the matches (each
// [start, end), in order, not overlapping) and the text between them.
func segments(matches [][]int, n int) []segment {
	out := make([]segment, 0, 2*len(matches)+1)
	prev := 0
	for _, m := range matches {
		if m[0] > prev {
			out = append(out, segment{prev, m[0], false})
		}
		out = append(out, segment{m[0], m[1], true})
		prev = m[1]
	}
	if prev < n {
		out = append(out, segment{prev, n, false})
	}
	return out
}

// applyBehavior makes the pieces of segs as behavior says (after invert
// swapped what is a match), as Hugging Face's NormalizedString::split
// does: Removed drops the matches; Isolated keeps each stretch a piece;
// MergedWithPrevious joins a match to the stretch before it,
// MergedWithNext to the stretch after it; Contiguous joins stretches of
// the same kind.
func applyBehavior(segs []segment, behavior splitBehavior, invert bool) []segment {
	if invert {
		for i := range segs {
			segs[i].match = !segs[i].match
		}
	}
	out := segs[:0:0]
	switch behavior {
	case behaviorRemoved:
		for _, s := range segs {
			if !s.match {
				out = append(out, s)
			}
		}
	case behaviorIsolated:
		out = segs
	case behaviorMergedWithPrevious, behaviorContiguous:
		previousMatch := false
		for _, s := range segs {
			joins := s.match && !previousMatch
			if behavior == behaviorContiguous {
				joins = s.match == previousMatch
			}
			if joins && len(out) > 0 {
				out[len(out)-1].end = s.end
			} else {
				out = append(out, s)
			}
			previousMatch = s.match
		}
	case behaviorMergedWithNext:
		previousMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			s := segs[i]
			if s.match && !previousMatch && len(out) > 0 {
				out[len(out)-1].start = s.start
			} else {
				out = append(out, s)
			}
			previousMatch = s.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// yieldSegments gives the pieces of s that segs mark, skipping empty ones
// (Hugging Face drops an empty split).
func yieldSegments(s string, at int, segs []segment, yield func(string, int) error) error {
	for _, seg := range segs {
		if seg.end > seg.start {
			if err := yield(s[seg.start:seg.end], at+seg.start); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitBy is a pre-tokenizer that cuts at the stretches find returns, as
// behavior and invert say.
func splitBy(find func(s string) ([][]int, error), behavior splitBehavior, invert bool) preTokenizer {
	return func(s string, at int, yield func(string, int) error) error {
		matches, err := find(s)
		if err != nil {
			return err
		}
		return yieldSegments(s, at, applyBehavior(segments(matches, len(s)), behavior, invert), yield)
	}
}

// literalMatches finds the non-overlapping occurrences of literal in s,
// left to right (a Split's String pattern).
func literalMatches(literal string) func(string) ([][]int, error) {
	return func(s string) ([][]int, error) {
		var out [][]int
		if literal == "" {
			return nil, nil
		}
		for pos := 0; ; {
			i := strings.Index(s[pos:], literal)
			if i < 0 {
				return out, nil
			}
			out = append(out, []int{pos + i, pos + i + len(literal)})
			pos += i + len(literal)
		}
	}
}

// charMatches makes each character of s for which is holds a match of its
// own (Digits, Punctuation). A byte that is not UTF-8 is a character that
// is neither.
func charMatches(is func(rune) bool) func(string) ([][]int, error) {
	return func(s string) ([][]int, error) {
		var out [][]int
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if (r != utf8.RuneError || size > 1) && is(r) {
				out = append(out, []int{i, i + size})
			}
			i += size
		}
		return out, nil
	}
}

// isPunctuation is Hugging Face's Punctuation pre-tokenizer's class: ASCII
// punctuation (which holds symbols such as $ + < = > ^ ` | ~) or Unicode's.
func isPunctuation(r rune) bool {
	return unicode.IsPunct(r) || r < utf8.RuneSelf && strings.ContainsRune("$+<=>^`|~", r)
}
