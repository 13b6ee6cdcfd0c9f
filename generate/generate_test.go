package generate

import (
	"math"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestCacheAndRecomputeWriteTheSameTokens: over a batch of prompts of
// different lengths, greedy and seeded sampled generation give the same
// tokens with the KV cache and without it, for attention kinds whose caches
// differ (keys and values, grouped heads, latents) and both paths.
func TestCacheAndRecomputeWriteTheSameTokens(t *testing.T) {
	base := model.Config{Vocab: 13, Context: 24, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 32, Dropout: 0.2}
	variants := map[string]func(*model.Config){
		"learned":      func(*model.Config) {},
		"rope-gqa":     func(c *model.Config) { c.Position, c.KVHeads = model.PositionRope, 2 },
		"alibi-window": func(c *model.Config) { c.Position, c.Window = model.PositionALiBi, 5 },
		"mla":          func(c *model.Config) { c.KVLatent = 6 },
	}
	prompts := [][]int{{1, 2, 3}, {4}, {5, 6, 7, 8, 9, 10, 11}}
	n := []int{12, 16, 9}
	for name, edit := range variants {
		for _, path := range []string{"fused", "gorgonia"} {
			cfg := base
			edit(&cfg)
			cfg.Attention = path
			m, err := model.New(cfg, tensor.Float64, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range []Options{Greedy, {Temperature: 1.5, TopK: 6, TopP: 0.9, Seed: 3}} {
				var got [2][][]int
				for i, cached := range []bool{true, false} {
					st, err := New(m, len(prompts), 18, cached)
					if err != nil {
						t.Fatal(err)
					}
					s, err := NewSampler(o)
					if err != nil {
						t.Fatal(err)
					}
					if got[i], err = Generate(st, prompts, n, s, cfg.Vocab); err != nil {
						t.Fatalf("%s/%s cached=%v: %v", name, path, cached, err)
					}
					st.Close()
				}
				for r := range prompts {
					if len(got[0][r]) != n[r] || !equal(got[0][r], got[1][r]) {
						t.Errorf("%s/%s %+v row %d: cached %v, recomputed %v (want %d tokens)", name, path, o, r, got[0][r], got[1][r], n[r])
					}
				}
			}
		}
	}
}

// TestGreedyMatchesReference: greedy generation equals a plain loop that
// runs a full forward of each prefix and appends the argmax.
func TestGreedyMatchesReference(t *testing.T) {
	cfg := model.Config{Vocab: 9, Context: 12, DModel: 16, Heads: 2, Layers: 1, Position: model.PositionRope}
	m, err := model.New(cfg, tensor.Float64, 11)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int{3, 1, 4}
	st, err := New(m, 1, 12, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := NewSampler(Greedy)
	got, err := Generate(st, [][]int{prompt}, []int{8}, s, cfg.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	seq := append([]int(nil), prompt...)
	for range 8 {
		g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: len(seq)})
		if err != nil {
			t.Fatal(err)
		}
		mask := make([]float64, len(seq))
		if err := g.Feed(seq, seq, mask); err != nil {
			t.Fatal(err)
		}
		vm := g.NewLeanMachine()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		logits, _ := model.Float64s(g.Logits.Value())
		vm.Close()
		last := logits[(len(seq)-1)*cfg.Vocab:]
		best := 0
		for i, v := range last {
			if v > last[best] {
				best = i
			}
		}
		seq = append(seq, best)
	}
	if !equal(got[0], seq[len(prompt):]) {
		t.Errorf("generated %v, reference %v", got[0], seq[len(prompt):])
	}
}

// TestAutoregressiveExactMatchOnInduction: on the shipped induction model,
// a row is written exactly on its own if and only if teacher forcing
// predicts its every scored token (each answer token's input is the
// previous target), so the two exact-match counts agree; per row, the
// written tokens equal the teacher-forced predictions of the rows it gets
// right.
func TestAutoregressiveExactMatchOnInduction(t *testing.T) {
	op := opentest.Induction(t)
	m := op.Model
	set := data.EvalSet(op.Task, 64, op.Config.Seed)
	res, err := Evaluate(m, set, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := model.Build(m, model.BuildOptions{Batch: set.Size, SeqLen: set.SeqLen})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Feed(set.Tokens, set.Targets, set.Mask); err != nil {
		t.Fatal(err)
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	logits, _ := model.Float64s(g.Logits.Value())
	v, tt := m.Config.Vocab, set.SeqLen
	exact := 0
	for r := range set.Size {
		_, targets, mask := set.Row(r)
		right := true
		for p := range tt {
			if mask[p] != 0 && Argmax(logits[(r*tt+p)*v:(r*tt+p+1)*v]) != targets[p] {
				right = false
			}
		}
		if right {
			exact++
		}
	}
	if res.Rows != set.Size || res.Exact != exact || res.TeacherExact != exact {
		t.Errorf("autoregressive exact %d of %d rows (%d tokens right), teacher-forced exact %d (its own count %d, %d tokens right) of %d", res.Exact, res.Rows, res.TokensRight, exact, res.TeacherExact, res.TeacherTokensRight, set.Size)
	}
	if exact == 0 || exact == set.Size {
		t.Logf("teacher-forced exact %d of %d: the check cannot tell right from wrong rows apart", exact, set.Size)
	}
}

// TestSampler: greedy settings take the argmax; a seed repeats its draws;
// draws stay inside top-k and top-p; at temperature T the frequencies
// follow softmax(logits/T) within 4 standard errors.
func TestSampler(t *testing.T) {
	logits := []float64{1, 3, 2, 3, -1, 0.5}
	for _, o := range []Options{Greedy, {Temperature: 2, TopK: 1, TopP: 1}} {
		s, _ := NewSampler(o)
		if got := s.Pick(logits); got != 1 {
			t.Errorf("%+v picked %d, want 1 (the first of the largest)", o, got)
		}
	}
	draw := func(o Options, n int) []int {
		s, err := NewSampler(o)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = s.Pick(logits)
		}
		return out
	}
	a, b := draw(Options{Temperature: 1, TopP: 1, Seed: 9}, 50), draw(Options{Temperature: 1, TopP: 1, Seed: 9}, 50)
	if !equal(a, b) {
		t.Error("the same seed drew different tokens")
	}
	for _, id := range draw(Options{Temperature: 5, TopK: 3, TopP: 1, Seed: 1}, 2000) {
		if id != 1 && id != 3 && id != 2 {
			t.Fatalf("top-k 3 drew %d, outside the three largest logits", id)
		}
	}
	// At temperature 1 the two largest hold e^3/(2e^3+e^2+...) each, about
	// 0.39, so top-p 0.5 keeps exactly those two.
	for _, id := range draw(Options{Temperature: 1, TopP: 0.5, Seed: 2}, 2000) {
		if id != 1 && id != 3 {
			t.Fatalf("top-p 0.5 drew %d, outside the smallest set reaching 0.5", id)
		}
	}
	const n, temp = 40000, 1.7
	counts := make([]float64, len(logits))
	for _, id := range draw(Options{Temperature: temp, TopP: 1, Seed: 4}, n) {
		counts[id]++
	}
	var z float64
	for _, l := range logits {
		z += math.Exp(l / temp)
	}
	for i, l := range logits {
		p := math.Exp(l/temp) / z
		if se := math.Sqrt(p * (1 - p) / n); math.Abs(counts[i]/n-p) > 4*se {
			t.Errorf("token %d drawn %.4f of the time, softmax gives %.4f (4 s.e. = %.4f)", i, counts[i]/n, p, 4*se)
		}
	}
	for _, bad := range []Options{{Temperature: -1, TopP: 1}, {TopP: 0}, {TopP: 1.5}, {TopK: -2, TopP: 1}, {Temperature: math.NaN(), TopP: 1}} {
		if _, err := NewSampler(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCachedLogitsOverPromptsOfDifferentLengths: fed the same tokens, rows
// still inside prompts of different lengths and rows already writing, the
// KV cache's logits equal a full forward of each row's prefix at every step
// (float64, 1e-12), on both paths, for grouped-query attention with rotary
// positions and for latent attention.
func TestCachedLogitsOverPromptsOfDifferentLengths(t *testing.T) {
	for _, cfg := range []model.Config{
		{Vocab: 11, Context: 14, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24, Position: model.PositionRope, KVHeads: 2},
		{Vocab: 11, Context: 14, DModel: 16, Heads: 4, Layers: 2, KVLatent: 6, Position: model.PositionALiBi, Window: 4},
	} {
		for _, path := range []string{"fused", "gorgonia"} {
			cfg.Attention = path
			m, err := model.New(cfg, tensor.Float64, 8)
			if err != nil {
				t.Fatal(err)
			}
			cached, err := New(m, 3, 12, true)
			if err != nil {
				t.Fatal(err)
			}
			full, err := New(m, 3, 12, false)
			if err != nil {
				t.Fatal(err)
			}
			prompts := [][]int{{1}, {2, 3, 4, 5}, {6, 7, 8, 9, 10, 1, 2}}
			s, _ := NewSampler(Greedy)
			next := make([]int, 3)
			var written [3][]int
			for step := 0; step < 12; step++ {
				for r, p := range prompts {
					if step < len(p) {
						next[r] = p[step]
					} else {
						next[r] = written[r][len(written[r])-1]
					}
				}
				a, err := cached.Step(next)
				if err != nil {
					t.Fatal(err)
				}
				b, err := full.Step(next)
				if err != nil {
					t.Fatal(err)
				}
				for i := range a {
					if math.Abs(a[i]-b[i]) > 1e-12*math.Max(1, math.Abs(b[i])) {
						t.Fatalf("%s %s step %d: logit %d cached %v, full forward %v", cfg.Family(), path, step, i, a[i], b[i])
					}
				}
				for r, p := range prompts {
					if step >= len(p)-1 {
						written[r] = append(written[r], s.Pick(a[r*cfg.Vocab:(r+1)*cfg.Vocab]))
					}
				}
			}
			cached.Close()
			full.Close()
		}
	}
}
