package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedTokens finds a tokenizer.json's added tokens in text as Hugging
// Face's tokenizers do: the leftmost match, and of the names matching
// there the longest, each taken whole (never split, never merged); then
// single_word drops a match inside a word, lstrip and rstrip take the
// whitespace before and after it into it.
type addedTokens struct {
	byFirst [256][]addedName // by the name's first byte, longest first
	any     bool
}

// addedName is one added token as it is matched: its name, id and
// options.
type addedName struct {
	name                      string
	id                        int
	lstrip, rstrip, wholeWord bool
}

// newAddedTokens is a matcher of tokens; no name is empty.
func newAddedTokens(tokens []addedName) addedTokens {
	var a addedTokens
	for _, t := range tokens {
		first := t.name[0]
		a.byFirst[first] = append(a.byFirst[first], t)
		a.any = true
	}
	for _, names := range a.byFirst {
		sort.Slice(names, func(i, j int) bool {
			return len(names[i].name) > len(names[j].name) || len(names[i].name) == len(names[j].name) && names[i].name < names[j].name
		})
	}
	return a
}

// next finds the first added token in s: before is the length of the text
// ahead of it, t the token; without one, before is len(s) and ok false.
func (a *addedTokens) next(s string) (before int, t addedName, ok bool) {
	if a.any {
		for i := range len(s) {
			for _, t := range a.byFirst[s[i]] {
				if strings.HasPrefix(s[i:], t.name) {
					return i, t, true
				}
			}
		}
	}
	return len(s), addedName{}, false
}

// split cuts s at its added tokens, as Hugging Face's AddedVocabulary
// does: text gets each stretch between them, token each token's id, in
// order. Matches are found left to right without overlap; one that
// single_word drops stays text. lstrip takes the whitespace before a token
// (not into an earlier token), rstrip the whitespace after it.
func (a *addedTokens) split(s string, text func(stretch string, at int) error, token func(id int) error) error {
	last := 0 // where the last token taken ends
	for from := 0; from < len(s); {
		before, t, ok := a.next(s[from:])
		if !ok {
			break
		}
		start, end := from+before, from+before+len(t.name)
		from = end
		if t.wholeWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[end:])) {
			continue
		}
		if t.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), last)
		}
		if t.rstrip {
			end = len(s) - len(strings.TrimLeftFunc(s[end:], unicode.IsSpace))
			from = end
		}
		if last < start {
			if err := text(s[last:start], last); err != nil {
				return err
			}
		}
		if err := token(t.id); err != nil {
			return err
		}
		last = end
	}
	if last < len(s) {
		return text(s[last:], last)
	}
	return nil
}

// isWordChar is the Rust regex crate's \w, by which Hugging Face tells a
// word from what is around it: Alphabetic, a mark, a connector (_), a
// decimal digit, or a joiner.
func isWordChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.In(r, unicode.Nl, unicode.Other_Alphabetic, unicode.M, unicode.Pc, unicode.Nd, unicode.Join_Control)
}

func endsWithWordChar(s string) bool {
	r, size := utf8.DecodeLastRuneInString(s)
	return size > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return size > 0 && isWordChar(r)
}
