package heads

import (
	"math"

	"github.com/pkg/errors"
)

// EntropyStat names the entropy statistic among CorpusStats.
const EntropyStat = "entropy"

// CorpusStats are the statistics Window gives a head on one window of a
// text, in the order of WindowScores: TransformerLens's head detector's
// three patterns, the attention sink, self, and the entropy in nats.
var CorpusStats = []string{string(PreviousToken), string(Duplicate), string(Induction), string(FirstToken), string(Self), EntropyStat}

// NumCorpusStats is len(CorpusStats).
const NumCorpusStats = 6

// WindowScores are one head's CorpusStats on one window, in their order.
type WindowScores [NumCorpusStats]float64

// Window holds what one window's tokens decide of the scores, shared by
// every head run on it: the pairs of positions holding the same token.
type Window struct {
	t     int
	pairs [][2]int // (i, j), j < i, tokens[j] == tokens[i]
}

// NewWindow reads the tokens of one window; buf is reused when it is a
// Window of an earlier one (nil: a new one).
func NewWindow(buf *Window, tokens []int) *Window {
	if buf == nil {
		buf = &Window{}
	}
	buf.t, buf.pairs = len(tokens), buf.pairs[:0]
	for i, v := range tokens {
		for j, u := range tokens[:i] {
			if u == v {
				buf.pairs = append(buf.pairs, [2]int{i, j})
			}
		}
	}
	return buf
}

// Scores is the head of weights w's CorpusStats on the window, w being its
// (T, T) weights flat, rows = queries. The pattern scores are
// TransformerLens's detect_head with its default "mul" measure: the share
// of the head's causal attention mass that falls on the pattern's keys,
// sum_ij w_ij D_ij / sum_ij w_ij, every row counted (a row with no target,
// as row 0 for the previous token, adds nothing above). Previous-token's
// keys are {i-1}; duplicate-token's the earlier positions j < i holding
// the token at i; induction's the positions j+1 just after those (which
// may be i itself, as in TransformerLens); first-token's {0}, the
// attention sink; self's {i}. Entropy is the mean over rows 1..T-1 of the
// row's entropy in nats (row 0 has one key and no choice).
func (win *Window) Scores(w []float64) (WindowScores, error) {
	t := win.t
	if len(w) != t*t {
		return WindowScores{}, errors.Errorf("got %d weights, want %d x %d", len(w), t, t)
	}
	var s WindowScores
	var total, previous, first, self, entropy float64
	for i := range t {
		row := w[i*t : i*t+i+1] // causal keys 0..i
		for _, x := range row {
			total += x
		}
		first += row[0]
		self += row[i]
		if i >= 1 {
			previous += row[i-1]
			entropy += Entropy(row)
		}
	}
	var duplicate, induction float64
	for _, p := range win.pairs {
		duplicate += w[p[0]*t+p[1]]
		induction += w[p[0]*t+p[1]+1]
	}
	if total == 0 {
		return s, errors.New("the weights' causal part sums to 0")
	}
	s = WindowScores{previous / total, duplicate / total, induction / total, first / total, self / total, 0}
	if t > 1 {
		s[5] = entropy / float64(t-1)
	}
	return s, nil
}

// Spread is the running mean, standard deviation and range of a statistic
// over the windows added (Welford's update): its memory is the same for
// one window as for a million.
type Spread struct {
	N    int     `json:"-"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"` // sample standard deviation (n - 1), 0 for one window
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
	m2   float64
}

// Add pools one window's value.
func (s *Spread) Add(x float64) {
	s.N++
	if s.N == 1 {
		s.Min, s.Max = x, x
	}
	s.Min, s.Max = math.Min(s.Min, x), math.Max(s.Max, x)
	d := x - s.Mean
	s.Mean += d / float64(s.N)
	s.m2 += d * (x - s.Mean)
	if s.N > 1 {
		s.SD = math.Sqrt(s.m2 / float64(s.N-1))
	}
}
