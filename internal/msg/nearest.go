package msg

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
