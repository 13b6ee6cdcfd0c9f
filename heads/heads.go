package heads

import (
	"fmt"
	"math"
	"slices"

	"github.com/pkg/errors"
)

// Pattern names one thing a head can do.
type Pattern string

// The patterns, in tie-break order.
const (
	PreviousToken Pattern = "previous-token"
	Self          Pattern = "self"
	FirstToken    Pattern = "first-token"
	Separator     Pattern = "separator"
	Offset        Pattern = "offset"
	Duplicate     Pattern = "duplicate-token"
	Induction     Pattern = "induction"
	// SmallestRemaining and NextLarger read token values, not positions:
	// the patterns of a sorting head.
	SmallestRemaining Pattern = "smallest-remaining"
	NextLarger        Pattern = "next-larger"
	// MatchingBracket reads the innermost bracket still open at the query:
	// for a closing bracket, the one it closes. It is scored only with
	// Options.Brackets (text).
	MatchingBracket Pattern = "matching-bracket"
	// Diffuse is the role of a head no pattern explains well enough.
	Diffuse Pattern = "diffuse"
)

// Patterns lists the scored patterns in tie-break order.
var Patterns = []Pattern{PreviousToken, Self, FirstToken, Separator, Offset, Duplicate, Induction, SmallestRemaining, NextLarger, MatchingBracket}

// DefaultThreshold is the score a pattern needs to name the head.
const DefaultThreshold = 0.4

// NoSeparator says the task has no separator token.
const NoSeparator = -1

// Options configures an Accumulator.
type Options struct {
	// Separator is the separator token id, or NoSeparator; without one the
	// separator pattern has no eligible rows and scores 0.
	Separator int
	// Threshold is the score the best pattern needs to become the role;
	// 0 means DefaultThreshold.
	Threshold float64
	// Brackets maps each closing bracket's id to its opening bracket's
	// ("}" to "{"): with it the matching-bracket pattern is scored; without
	// it the pattern is left out of the result.
	Brackets map[int]int
	// SkipEntropy leaves Result.Entropy and EntropyNorm at 0, for a caller
	// that wants only the pattern scores: the logarithms are half the cost
	// of Add.
	SkipEntropy bool
}

// Result is what a head does, pooled over every sequence added.
type Result struct {
	Role  Pattern `json:"role"`
	Score float64 `json:"score"` // score of the role's pattern (the best score when Diffuse)
	// OffsetK is the k of the best fixed offset, 2 <= k <= T - ceil(T/3)
	// (0 when there is none); its score is Scores["offset"]. Offsets 0 and 1
	// are the self and previous-token patterns.
	OffsetK int    `json:"offset_k,omitempty"`
	Scores  Scores `json:"scores"`
	// Entropy is the mean row entropy in nats over rows with at least two keys.
	Entropy float64 `json:"entropy"`
	// EntropyNorm is the mean of each such row's entropy / log(#keys), in [0, 1].
	EntropyNorm float64 `json:"entropy_norm"`
	Sequences   int     `json:"sequences"` // how many sequences were pooled
}

// String names the role in words with its score, e.g. "offset k=3
// (0.91)"; a head below the threshold is "diffuse" with its strongest
// pattern, "diffuse (best: offset k=2 0.03)", the one wording every view
// uses.
func (r Result) String() string {
	if r.Role == Diffuse {
		return Below(r.patternName(r.Strongest()), r.Score)
	}
	return fmt.Sprintf("%s (%.2f)", r.Name(), r.Score)
}

// Name names the role without its score: "offset k=3", "induction",
// "diffuse (best: self)".
func (r Result) Name() string {
	if r.Role == Diffuse {
		return fmt.Sprintf("%s (best: %s)", Diffuse, r.patternName(r.Strongest()))
	}
	return r.patternName(r.Role)
}

// Code is the role in two or three letters, for a grid of many heads:
// "pv" previous-token, "sf" self, "ft" first-token, "sp" separator, "o3"
// offset k=3, "dp" duplicate-token, "in" induction, "mn"
// smallest-remaining, "nx" next-larger, "br" matching-bracket; "" for a
// diffuse head.
func (r Result) Code() string {
	if r.Role == Offset {
		return fmt.Sprintf("o%d", r.OffsetK)
	}
	return codes[r.Role]
}

var codes = map[Pattern]string{
	PreviousToken: "pv", Self: "sf", FirstToken: "ft", Separator: "sp", Duplicate: "dp", Induction: "in",
	SmallestRemaining: "mn", NextLarger: "nx", MatchingBracket: "br",
}

// Below is how a head whose strongest pattern scores under the threshold is
// named: "diffuse (best: previous-token 0.37)".
func Below(strongest string, score float64) string {
	return fmt.Sprintf("diffuse (best: %s %.2f)", strongest, score)
}

// Strongest is the pattern with the highest score (the first in Patterns
// order on a tie), the role when it reaches the threshold.
func (r Result) Strongest() Pattern {
	best, score := Diffuse, 0.0
	for _, p := range Patterns {
		if r.Scores[p] > score {
			best, score = p, r.Scores[p]
		}
	}
	return best
}

// patternName is p in words: "offset k=3" for the offset pattern.
func (r Result) patternName(p Pattern) string {
	if p == Offset {
		return fmt.Sprintf("offset k=%d", r.OffsetK)
	}
	return string(p)
}

// tally pools row scores for one pattern.
type tally struct {
	sum  float64
	rows int
}

func (t *tally) add(score float64) { t.sum += score; t.rows++ }

// avg is the mean row value, 0 with no rows.
func (t tally) avg() float64 {
	if t.rows == 0 {
		return 0
	}
	return t.sum / float64(t.rows)
}

// mean is the pattern score: avg clamped to [0, 1].
func (t tally) mean() float64 { return clamp01(t.avg()) }

// Accumulator pools the pattern scores of one head over many sequences of the
// same length.
type Accumulator struct {
	opts     Options
	t        int
	tallies  map[Pattern]*tally
	offsets  []tally // offsets[k] for 2 <= k < T
	entropy  tally
	entNorm  tally
	sequence int
}

// NewAccumulator returns an empty accumulator for sequences of length t.
func NewAccumulator(t int, opts Options) (*Accumulator, error) {
	if t <= 0 {
		return nil, errors.Errorf("sequence length %d: must be positive", t)
	}
	if opts.Threshold == 0 {
		opts.Threshold = DefaultThreshold
	}
	if opts.Threshold < 0 || opts.Threshold > 1 {
		return nil, errors.Errorf("threshold %v: must be in (0, 1]", opts.Threshold)
	}
	a := &Accumulator{opts: opts, t: t, tallies: map[Pattern]*tally{}, offsets: make([]tally, t)}
	for _, p := range Patterns {
		a.tallies[p] = &tally{}
	}
	return a, nil
}

// Add pools one sequence: w is the head's (T, T) weight matrix, tokens the T
// token ids it was computed on. queries selects the query rows that count
// (a task's loss mask: rows where it is 0 are skipped); nil counts every row.
func (a *Accumulator) Add(w [][]float64, tokens []int, queries []float64) error {
	if len(w) != a.t || len(tokens) != a.t {
		return errors.Errorf("got %d weight rows and %d tokens, want %d of each", len(w), len(tokens), a.t)
	}
	if queries != nil && len(queries) != a.t {
		return errors.Errorf("got %d query selectors, want %d", len(queries), a.t)
	}
	for i, row := range w {
		if len(row) != a.t {
			return errors.Errorf("weight row %d has %d keys, want %d", i, len(row), a.t)
		}
	}
	a.sequence++
	targets := make([]int, 0, a.t)
	firstSep := slices.Index(tokens, a.opts.Separator)
	if a.opts.Separator == NoSeparator {
		firstSep = -1
	}
	for i := range w {
		if queries != nil && queries[i] == 0 {
			continue
		}
		row := w[i][:i+1] // causal keys 0..i
		if i >= 1 && !a.opts.SkipEntropy {
			h := Entropy(row)
			a.entropy.add(h)
			a.entNorm.add(h / math.Log(float64(i+1)))
		}
		score := func(p *tally, targets []int) {
			if s, ok := rowScore(row, targets); ok {
				p.add(s)
			}
		}
		score(a.tallies[PreviousToken], keys(targets[:0], i-1))
		score(a.tallies[Self], keys(targets[:0], i))
		score(a.tallies[FirstToken], keys(targets[:0], 0))
		targets = targets[:0]
		for j := 0; j <= i; j++ {
			if a.opts.Separator != NoSeparator && tokens[j] == a.opts.Separator {
				targets = append(targets, j)
			}
		}
		score(a.tallies[Separator], targets)
		for k := 2; k <= i; k++ {
			score(&a.offsets[k], keys(targets[:0], i-k))
		}
		targets = targets[:0]
		for j := 0; j < i; j++ {
			if tokens[j] == tokens[i] {
				targets = append(targets, j)
			}
		}
		score(a.tallies[Duplicate], targets)
		// Induction reads the token after an earlier occurrence j of the
		// current token; j+1 == i would be the query itself (self), so j < i-1.
		targets = targets[:0]
		for j := 0; j+1 < i; j++ {
			if tokens[j] == tokens[i] {
				targets = append(targets, j+1)
			}
		}
		score(a.tallies[Induction], targets)
		score(a.tallies[SmallestRemaining], smallestRemaining(targets[:0], tokens, i, firstSep))
		score(a.tallies[NextLarger], nextLarger(targets[:0], tokens, i, a.opts.Separator))
		if a.opts.Brackets != nil {
			score(a.tallies[MatchingBracket], openBracket(targets[:0], tokens, i, a.opts.Brackets))
		}
	}
	return nil
}

// smallestRemaining returns, for a query at or after the first separator
// sep, the positions before sep holding the smallest symbol not yet written
// after it: the symbols before sep, less one of each symbol at positions
// sep+1..i. That is where a sorting head finds the next output. None when
// there is no separator, the query is before it, or nothing remains.
func smallestRemaining(buf, tokens []int, i, sep int) []int {
	if sep < 0 || i < sep {
		return buf
	}
	left := map[int]int{}
	for _, v := range tokens[:sep] {
		left[v]++
	}
	for _, v := range tokens[sep+1 : i+1] {
		if left[v] > 0 {
			left[v]--
		}
	}
	return holding(buf, tokens[:sep], func(v int) bool { return left[v] > 0 })
}

// nextLarger returns the earlier positions (j < i) holding the smallest
// symbol larger than the query's, the separator aside: what a head reading
// "the next one up" from the current token attends to. None when no
// earlier symbol is larger.
func nextLarger(buf, tokens []int, i, sep int) []int {
	return holding(buf, tokens[:i], func(v int) bool { return v != sep && v > tokens[i] })
}

// openBracket returns the position of the innermost bracket open before the
// query i (brackets matched as a stack over tokens[:i]; a closer that does
// not match the innermost opener is ignored): for a closing bracket at i,
// the bracket it closes. None when every bracket before i is closed.
func openBracket(buf, tokens []int, i int, brackets map[int]int) []int {
	openers := map[int]bool{}
	for _, o := range brackets {
		openers[o] = true
	}
	var stack []int
	for j, v := range tokens[:i] {
		if openers[v] {
			stack = append(stack, j)
		} else if o, ok := brackets[v]; ok && len(stack) > 0 && tokens[stack[len(stack)-1]] == o {
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) == 0 {
		return buf
	}
	return append(buf, stack[len(stack)-1])
}

// holding appends the positions in tokens of the smallest value that
// qualifies, or nothing when none does.
func holding(buf, tokens []int, qualifies func(v int) bool) []int {
	smallest, found := 0, false
	for _, v := range tokens {
		if qualifies(v) && (!found || v < smallest) {
			smallest, found = v, true
		}
	}
	for j, v := range tokens {
		if found && v == smallest {
			buf = append(buf, j)
		}
	}
	return buf
}

// Result scores the pooled sequences.
func (a *Accumulator) Result() Result {
	r := Result{Scores: Scores{}, Sequences: a.sequence}
	for _, p := range Patterns {
		if p == MatchingBracket && a.opts.Brackets == nil {
			continue
		}
		r.Scores[p] = a.tallies[p].mean()
	}
	for k := 2; k <= maxOffset(a.t); k++ {
		if s := a.offsets[k].mean(); r.OffsetK == 0 || s > r.Scores[Offset] {
			r.Scores[Offset], r.OffsetK = s, k
		}
	}
	r.Role = Diffuse
	best := Diffuse
	for _, p := range Patterns {
		if r.Scores[p] > r.Score {
			best, r.Score = p, r.Scores[p]
		}
	}
	if r.Score >= a.opts.Threshold {
		r.Role = best
	}
	r.Entropy = a.entropy.avg()
	r.EntropyNorm = a.entNorm.avg()
	return r
}

// maxOffset is the largest offset k scored for length t: it keeps at least
// ceil(t/3) eligible query rows per sequence, so that the best of many
// offsets cannot be a k that only the last row or two happen to fit.
func maxOffset(t int) int { return t - (t+2)/3 }

// Score is the one-sequence shortcut: the Result of a single Add of every row.
func Score(w [][]float64, tokens []int, opts Options) (Result, error) {
	a, err := NewAccumulator(len(tokens), opts)
	if err != nil {
		return Result{}, err
	}
	if err := a.Add(w, tokens, nil); err != nil {
		return Result{}, err
	}
	return a.Result(), nil
}

// rowScore is (m - u) / (1 - u) for one causal row and its target keys, and
// false when the row is not eligible (no target, or every key a target).
func rowScore(row []float64, targets []int) (float64, bool) {
	n := len(row)
	if len(targets) == 0 || len(targets) >= n {
		return 0, false
	}
	var m float64
	for _, j := range targets {
		m += row[j]
	}
	u := float64(len(targets)) / float64(n)
	return (m - u) / (1 - u), true
}

// keys returns the one-key target set {j}, or none when j < 0.
func keys(buf []int, j int) []int {
	if j < 0 {
		return buf
	}
	return append(buf, j)
}

// Entropy is the entropy in nats of a row of probabilities (0 log 0 = 0).
func Entropy(row []float64) float64 {
	var h float64
	for _, p := range row {
		if p > 0 {
			h -= p * math.Log(p)
		}
	}
	return h
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// Maps gives head h of layer l's (T, T) weights on sequence b of a batch,
// rows = queries.
type Maps func(l, b, h int) [][]float64

// Pool scores every head of a model of layers x heads over a batch: maps
// gives the weights, tokens[b] sequence b's ids and queries[b] the query
// rows that count (nil queries, or a nil entry, counts every row). The
// result is [layer][head].
func Pool(maps Maps, layers, heads int, tokens [][]int, queries [][]float64, opts Options) ([][]Result, error) {
	out := make([][]Result, layers)
	if len(tokens) == 0 {
		return out, nil
	}
	for l := range layers {
		for h := range heads {
			acc, err := NewAccumulator(len(tokens[0]), opts)
			if err != nil {
				return nil, err
			}
			for b := range tokens {
				var q []float64
				if queries != nil {
					q = queries[b]
				}
				if err := acc.Add(maps(l, b, h), tokens[b], q); err != nil {
					return nil, errors.Wrapf(err, "layer %d head %d sequence %d", l, h, b)
				}
			}
			out[l] = append(out[l], acc.Result())
		}
	}
	return out, nil
}
