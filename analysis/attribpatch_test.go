package analysis_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
)

// inductionPair is a clean sequence, a block of n distinct random tokens
// then its first n-1 again, whose last position predicts the block's last
// token by induction, and its corruption, the first block's last token
// replaced by one the sequence does not hold (the minimal pair of circuit
// work); the answer is the clean block's last token and the wrong one its
// replacement, which the corrupted sequence's induction predicts.
func inductionPair(seed uint64, n, vocab int) (clean, corrupted []int, metric analysis.PatchMetric) {
	perm := rand.New(rand.NewPCG(seed, 49)).Perm(vocab)
	block, wrong := perm[:n], perm[n]
	clean = append(append([]int(nil), block...), block[:n-1]...)
	corrupted = append([]int(nil), clean...)
	corrupted[n-1] = wrong
	return clean, corrupted, analysis.LogitDiff(block[n-1], wrong)
}

// activationPatching is activation patching's figure for every component
// AttributionPatch estimates, in a's order (every layer's heads, then each
// stream kind's layers by position): analysis.PatchHeads and PatchStream
// with the roles swapped (they patch the run they are given into the run
// of the sequences they are given, here the corrupted run's activations
// into the clean sequences), each figure the patched metric less the
// clean run's.
func activationPatching(t *testing.T, m *model.Model, a *analysis.AttributionPatching, clean, corrupted []int, metric analysis.PatchMetric) []float64 {
	t.Helper()
	var figures []float64
	patch := func(kind string) {
		src, err := analysis.RunTokensWithCache(m, [][]int{corrupted}, analysis.PatchNames(m.Config, kind)...)
		if err != nil {
			t.Fatal(err)
		}
		run := analysis.PatchStream
		if kind == "z" {
			run = func(c *analysis.Cache, seqs [][]int, kind string, metric analysis.Metric, hs ablation.Heads, progress func(int, int)) (*analysis.ActivationPatching, error) {
				return analysis.PatchHeads(c, seqs, kind, false, metric, hs, progress)
			}
		}
		p, err := run(src, [][]int{clean}, kind, metric.Metric([][]int{clean}), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Values.Len() {
			figures = append(figures, p.Values.At(i)-p.Corrupted)
		}
	}
	patch("z")
	for _, kind := range analysis.StreamKinds {
		if a.Streams[kind] != nil {
			patch(kind)
		}
	}
	return figures
}

// estimates are a's estimates in activationPatching's order.
func estimates(a *analysis.AttributionPatching) []float64 {
	var out []float64
	for _, heads := range a.Heads {
		out = append(out, heads...)
	}
	for _, kind := range analysis.StreamKinds {
		for _, byPos := range a.Streams[kind] {
			out = append(out, byPos...)
		}
	}
	return out
}

// pearson is the correlation of x and y.
func pearson(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i] / float64(len(x))
		my += y[i] / float64(len(y))
	}
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

// TestAttributionPatchingTracksActivationPatching: over every head's z and
// every stream activation at every position (resid_pre, attn_out,
// resid_mid, mlp_out, resid_post, those the model has), attribution
// patching's estimates correlate with activation patching's figures
// (analysis.PatchHeads and PatchStream, held to a plain loop by their own
// test) at 0.9 or better
// (Pearson), on the committed induction run and on two tiny GPT-2s of
// Hugging Face's layout (2 layers, and distilgpt2's 6), for the logit
// difference, and the loss on GPT-2; and the other way (denoising:
// the clean run's activations into the corrupted run, the loss of the
// clean text, whose gradient is taken at the logits) on the induction run
// and GPT-2's loss. (The induction run's loss over every
// position is no case: it is mostly the trained model's confident wrong
// guesses at the random tokens, far from linear; its Pearson is -0.40.)
func TestAttributionPatchingTracksActivationPatching(t *testing.T) {
	for _, c := range []struct {
		name, dir string
		n         int
		loss      bool
		denoise   bool // the clean run's activations into the corrupted run, the loss of the clean text
	}{
		{"induction", "../testdata/induction", 8, false, false},
		{"gpt2", "../open/hf/testdata/prefixed", 6, false, false},
		{"gpt2/loss", "../open/hf/testdata/prefixed", 6, true, false},
		{"gpt2/loss/denoising", "../open/hf/testdata/prefixed", 6, true, true},
		{"induction/denoising", "../testdata/induction", 8, false, true},
		{"distil", "../open/hf/testdata/distil", 6, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			op, err := open.Open(c.dir, open.Options{})
			if err != nil {
				t.Fatal(err)
			}
			m := op.Model
			clean, corrupted, metric := inductionPair(1, c.n, m.Config.Vocab)
			metric.Loss = c.loss
			if c.denoise {
				metric.Text = [][]int{clean}
				clean, corrupted = corrupted, clean
			}
			a, err := analysis.AttributionPatch(m, [][]int{clean}, [][]int{corrupted}, metric)
			if err != nil {
				t.Fatal(err)
			}
			estimates, figures := estimates(a), activationPatching(t, m, a, clean, corrupted, metric)
			if len(estimates) != len(figures) {
				t.Fatalf("%d estimates for %d components patched", len(estimates), len(figures))
			}
			r := pearson(estimates, figures)
			t.Logf("%d components, clean %.4g, corrupted %.4g, Pearson %.4f", len(estimates), a.Clean, a.Corrupted, r)
			if r < 0.9 || math.IsNaN(r) {
				t.Errorf("attribution patching correlates with activation patching at %.4f, want >= 0.9", r)
			}
		})
	}
}

// TestAttributionPatchRefuses: what attribution patching cannot run is
// refused on one line naming it, before any forward.
func TestAttributionPatchRefuses(t *testing.T) {
	m, _, _ := load()
	clean, corrupted, metric := inductionPair(1, 8, m.Config.Vocab)
	for _, c := range []struct {
		clean, corrupted [][]int
		metric           analysis.PatchMetric
		want             string
	}{
		{[][]int{clean}, [][]int{corrupted[:5]}, metric, "has 15 tokens and its corruption 5"},
		{[][]int{clean}, [][]int{corrupted, corrupted}, metric, "1 clean sequences and 2 corrupted"},
		{[][]int{clean}, [][]int{corrupted}, analysis.LogitDiff(3, 3), "both 3"},
		{[][]int{clean}, [][]int{corrupted}, analysis.LogitDiff(3, 32), "token 32 is outside the vocabulary [0, 32)"},
		{[][]int{clean[:1]}, [][]int{corrupted[:1]}, analysis.PatchMetric{Loss: true}, "one token has no next token"},
		{[][]int{clean}, [][]int{corrupted}, analysis.PatchMetric{Loss: true, Text: [][]int{clean[:3]}}, "the loss's text is 1 sequences of 3 tokens for a run of 1 of 15"},
	} {
		_, err := analysis.AttributionPatch(m, c.clean, c.corrupted, c.metric)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %v, want one line with %q", err, c.want)
		}
	}
	if _, err := analysis.RunTokensWithGrads(m, [][]int{clean}, metric, "blocks.0.attn.hook_result"); err == nil || !strings.Contains(err.Error(), "computed beside the forward") {
		t.Errorf("a head's result: error %v", err)
	}
}
