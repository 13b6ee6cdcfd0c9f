package tokenizer

import (
	"sort"
	"strings"
)

// addedTokens finds a tokenizer.json's added tokens in text as Hugging
// Face's tokenizers do: the leftmost match, and of the names matching
// there the longest, each taken whole (never split, never merged).
type addedTokens struct {
	byFirst [256][]addedName // by the name's first byte, longest first
	any     bool
}

type addedName struct {
	name string
	id   int
}

// newAddedTokens is a matcher of tokens, name to id; no name is empty.
func newAddedTokens(tokens map[string]int) addedTokens {
	var a addedTokens
	for name, id := range tokens {
		first := name[0]
		a.byFirst[first] = append(a.byFirst[first], addedName{name: name, id: id})
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
// ahead of it, id and size the token's id and length; without one, before
// is len(s) and id -1.
func (a *addedTokens) next(s string) (before, id, size int) {
	if a.any {
		for i := range len(s) {
			for _, t := range a.byFirst[s[i]] {
				if strings.HasPrefix(s[i:], t.name) {
					return i, t.id, len(t.name)
				}
			}
		}
	}
	return len(s), -1, 0
}
