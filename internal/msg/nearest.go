package msg

import (
	"strings"
	"unicode"
)

// Nearest returns the candidate closest to name by edit distance, when it is
// close enough to be a slip of the finger (at most a third of name's length
// plus one edits away, and fewer edits than name has letters), else "".
func Nearest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+1
	for _, c := range candidates {
		if d := distance(name, c); d > 0 && d < len(name) && d <= bestD && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b (bytes).
func distance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// DidYouMean is "; did you mean X?" for the allowed value X that value was
// probably meant to be, else "". X is, in this order: the allowed value
// equal to value but for case, '-' and '_' (RoPE, rms_norm); the one
// aliases gives for value so simplified (another library's word for it:
// rotary for rope); the nearest by spelling (Nearest).
func DidYouMean(value string, allowed []string, aliases map[string]string) string {
	simple := simplify(value)
	for _, a := range allowed {
		if simplify(a) == simple {
			return "; did you mean " + a + "?"
		}
	}
	if a, ok := aliases[simple]; ok {
		return "; did you mean " + a + "?"
	}
	if a := Nearest(value, allowed); a != "" {
		return "; did you mean " + a + "?"
	}
	return ""
}

// simplify lower-cases s and drops '-', '_' and spaces, the ways libraries
// spell one name differently.
func simplify(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}
