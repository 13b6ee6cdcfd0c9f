package analysis_test

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/open"
)

// lighthouse opens the nanoGPT character model of the lighthouse keeper's
// log and encodes the log in its tokenizer.
func lighthouse(t *testing.T) (*open.Opened, []int) {
	t.Helper()
	op, err := open.Open("../open/nanogpt/testdata/bias/ckpt.pt", open.Options{Vocab: "../open/nanogpt/testdata/meta.pkl"})
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("../open/nanogpt/testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := op.Tokenizer.Encode(string(text))
	if err != nil {
		t.Fatal(err)
	}
	return op, ids
}

// detectionScore is TransformerLens's detect_head "mul" score written out
// as it defines it: the detection pattern as a (T, T) 0/1 matrix built
// from the tokens, then sum(A * D) / sum(A) over the lower triangle.
func detectionScore(a [][]float64, tokens []int, pattern string) float64 {
	t := len(tokens)
	d := make([][]float64, t)
	for i := range d {
		d[i] = make([]float64, t)
		for j := 0; j < i; j++ {
			same := tokens[i] == tokens[j]
			switch {
			case pattern == "previous-token" && j == i-1,
				pattern == "duplicate-token" && same:
				d[i][j] = 1
			case pattern == "induction" && same:
				d[i][j+1] = 1 // the duplicate pattern rolled one key right
			}
		}
		switch pattern {
		case "first-token":
			d[i][0] = 1
		case "self":
			d[i][i] = 1
		}
	}
	var num, den float64
	for i := range t {
		for j := 0; j <= i; j++ {
			num += a[i][j] * d[i][j]
			den += a[i][j]
		}
	}
	return num / den
}

// meanEntropy is the mean over rows 1..T-1 of each row's entropy in nats.
func meanEntropy(a [][]float64) float64 {
	var sum float64
	for i := 1; i < len(a); i++ {
		for _, p := range a[i][:i+1] {
			if p > 0 {
				sum -= p * math.Log(p)
			}
		}
	}
	return sum / float64(len(a)-1)
}

// TestCorpusHeadsIsTheDetector: every head's mean, spread and range over
// 12 windows of the lighthouse log equal a plain loop that runs each window
// alone (ForwardTokens), scores it with TransformerLens's detection
// matrices built as it builds them, and takes the two-pass mean and sample
// standard deviation, to 1e-9.
func TestCorpusHeadsIsTheDetector(t *testing.T) {
	op, ids := lighthouse(t)
	o := analysis.CorpusOptions{Windows: 12, Length: 24, Seed: 7}
	c, err := analysis.CorpusHeads(op.Model, ids, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg := op.Model.Config
	if len(c.Heads) != cfg.Layers*cfg.Heads || c.Tokens != len(ids) {
		t.Fatalf("%d heads over %d tokens, want %d over %d", len(c.Heads), c.Tokens, cfg.Layers*cfg.Heads, len(ids))
	}
	rng := rand.New(rand.NewPCG(o.Seed, analysis.CorpusStream))
	values := make([][heads.NumCorpusStats][]float64, len(c.Heads))
	for range o.Windows {
		start := rng.IntN(len(ids) - o.Length + 1)
		window := ids[start : start+o.Length]
		pass, err := analysis.ForwardTokens(op.Model, window)
		if err != nil {
			t.Fatal(err)
		}
		for i := range c.Heads {
			a := pass.Map(i/cfg.Heads, i%cfg.Heads)
			for k, name := range heads.CorpusStats {
				v := meanEntropy(a)
				if name != heads.EntropyStat {
					v = detectionScore(a, window, name)
				}
				values[i][k] = append(values[i][k], v)
			}
		}
	}
	for i, h := range c.Heads {
		if h.Layer != i/cfg.Heads || h.Head != i%cfg.Heads || len(h.Scores) != heads.NumCorpusStats {
			t.Fatalf("head %d is layer %d head %d with %d scores", i, h.Layer, h.Head, len(h.Scores))
		}
		for k, s := range h.Scores {
			mean, sd, lo, hi := twoPass(values[i][k])
			if s.Name != heads.CorpusStats[k] || s.N != o.Windows || !near(s.Mean, mean) || !near(s.SD, sd) || !near(s.Min, lo) || !near(s.Max, hi) {
				t.Errorf("layer %d head %d %s: %+v, want mean %.12f sd %.12f range [%.12f, %.12f] over %d windows",
					h.Layer, h.Head, heads.CorpusStats[k], s, mean, sd, lo, hi, o.Windows)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9 }

// twoPass is the mean, sample standard deviation, least and largest of xs.
func twoPass(xs []float64) (mean, sd, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		mean += x
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1)), lo, hi
}

// TestCorpusHeadsStreams: the live heap at its highest while scoring 64
// windows is within 25% of that while scoring 8 (sampled at every window,
// after a collection): a run that kept each window's maps, or their scores,
// would hold 8 times as much.
func TestCorpusHeadsStreams(t *testing.T) {
	op, ids := lighthouse(t)
	peak := func(windows int) uint64 {
		var most uint64
		var ms runtime.MemStats
		sample := func(done, total int) {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			most = max(most, ms.HeapAlloc)
		}
		o := analysis.CorpusOptions{Windows: windows, Length: 32, Seed: 1, Progress: sample}
		if _, err := analysis.CorpusHeads(op.Model, ids, o); err != nil {
			t.Fatal(err)
		}
		return most
	}
	peak(2) // the runtime's own first allocations
	few, many := peak(8), peak(64)
	if float64(many) > 1.25*float64(few) {
		t.Errorf("live heap at most %d bytes over 64 windows, %d over 8: it grows with the windows", many, few)
	}
}

// TestCorpusHeadsRefuses: a text shorter than one window, a window longer
// than the learned positions, no windows, and one token: one line each.
func TestCorpusHeadsRefuses(t *testing.T) {
	op, ids := lighthouse(t)
	for _, c := range []struct {
		ids  []int
		o    analysis.CorpusOptions
		want string
	}{
		{ids[:10], analysis.CorpusOptions{Windows: 1, Length: 11}, "the text is 10 tokens, shorter than one window of 11"},
		{ids, analysis.CorpusOptions{Windows: 1, Length: op.Model.Config.Context + 1}, "longer than the model's context"},
		{ids, analysis.CorpusOptions{Windows: 0, Length: 8}, "0 windows: must be in [1, 1000000]"},
		{ids, analysis.CorpusOptions{Windows: 1, Length: 1}, "windows of 1 tokens: need at least 2"},
	} {
		_, err := analysis.CorpusHeads(op.Model, c.ids, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
}
