package generate

import (
	"errors"
	"math"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestCacheAndRecomputeWriteTheSameTokens: over a batch of prompts of
// different lengths, greedy and seeded sampled generation give the same
// tokens with the KV cache (whole, or growing from 2 positions) and without
// it, for attention kinds whose caches differ (keys and values, grouped
// heads, latents) and both paths.
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
				var got [3][][]int
				for i, cached := range []bool{false, true, true} {
					start := []int{18, 18, 2}[i]
					st, err := NewGrowing(m, len(prompts), start, 18, cached)
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
					if len(got[0][r]) != n[r] || !slices.Equal(got[0][r], got[1][r]) || !slices.Equal(got[0][r], got[2][r]) {
						t.Errorf("%s/%s %+v row %d: recomputed %v, cached %v, growing cache %v (want %d tokens)", name, path, o, r, got[0][r], got[1][r], got[2][r], n[r])
					}
				}
			}
		}
	}
}

// TestGreedyMatchesReference: greedy generation with the KV cache equals
// model.Reference, the model as plain loops, fed the prompt and then each
// token it ranks first (the lowest id on a tie). The weights are scaled to
// a standard deviation of 0.5, so that what the positions and the cache
// hold moves the ranking.
func TestGreedyMatchesReference(t *testing.T) {
	cfg := model.Config{Vocab: 9, Context: 12, DModel: 16, Heads: 2, Layers: 1, Position: model.PositionRope}
	m, err := model.New(cfg, tensor.Float64, 11)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params {
		for i := range p.Value.Float64s() {
			p.Value.Float64s()[i] *= 0.5 / model.InitStd
		}
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
	ref, err := model.NewReference(m)
	if err != nil {
		t.Fatal(err)
	}
	var logits []float64
	for _, token := range prompt {
		logits = ref.Step(token)
	}
	var want []int
	for len(want) < 8 {
		best := 0
		for i, v := range logits {
			if v > logits[best] {
				best = i
			}
		}
		want = append(want, best)
		logits = ref.Step(best)
	}
	if !slices.Equal(got[0], want) {
		t.Errorf("generated %v, reference %v", got[0], want)
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
	set := data.EvalSet(op.Task, 64, op.Run.Seed)
	res, err := Evaluate(m, set, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	logits := opentest.Logits(t, m, set)
	v, tt := m.Config.Vocab, set.SeqLen
	exact := 0
	for r := range set.Size {
		_, targets, mask := set.Row(r)
		right := true
		for p := range tt {
			if mask[p] != 0 && model.Argmax(logits[(r*tt+p)*v:(r*tt+p+1)*v]) != targets[p] {
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
	if !slices.Equal(a, b) {
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

// countingStepper counts the steps of the stepper it wraps.
type countingStepper struct {
	Stepper
	steps int
}

func (c *countingStepper) Step(tokens []int) ([]float64, error) {
	c.steps++
	return c.Stepper.Step(tokens)
}

// TestStreamEmitsEachTokenAsPicked: Stream hands over each row's token right
// after the step that picked it (the k-th token of a prompt of P after step
// P+k-1), rows in order, with the row's tokens so far; it writes what
// Generate writes, and an error from emit stops it at once.
func TestStreamEmitsEachTokenAsPicked(t *testing.T) {
	cfg := model.Config{Vocab: 9, Context: 16, DModel: 16, Heads: 2, Layers: 1, Position: model.PositionALiBi}
	m, err := model.New(cfg, tensor.Float64, 2)
	if err != nil {
		t.Fatal(err)
	}
	prompts, n := [][]int{{1, 2, 3}, {4}}, []int{5, 7}
	newStepper := func() *countingStepper {
		st, err := NewGrowing(m, len(prompts), 2, 10, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return &countingStepper{Stepper: st}
	}
	sampler := func() *Sampler {
		s, _ := NewSampler(Options{Temperature: 1, TopP: 1, Seed: 5})
		return s
	}
	stream := func(st Stepper, emit func(int, []int) error) ([][]int, error) {
		return Stream(st, prompts, n, sampler(), cfg.Vocab, emit)
	}
	want, err := Generate(newStepper(), prompts, n, sampler(), cfg.Vocab)
	if err != nil {
		t.Fatal(err)
	}
	st := newStepper()
	seen, lastRow, lastStep := make([][]int, len(prompts)), -1, 0
	got, err := stream(st, func(row int, written []int) error {
		if k := len(written); st.steps != len(prompts[row])+k-1 || k != len(seen[row])+1 {
			t.Errorf("row %d token %d handed over after step %d, want %d", row, k, st.steps, len(prompts[row])+k-1)
		}
		if st.steps == lastStep && row <= lastRow {
			t.Errorf("row %d after row %d in step %d", row, lastRow, st.steps)
		}
		seen[row], lastRow, lastStep = append(seen[row], written[len(written)-1]), row, st.steps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range prompts {
		if !slices.Equal(got[r], want[r]) || !slices.Equal(seen[r], want[r]) {
			t.Errorf("row %d: streamed %v, returned %v, Generate wrote %v", r, seen[r], got[r], want[r])
		}
	}
	stop, calls := errors.New("reader gone"), 0
	st = newStepper()
	if _, err := stream(st, func(int, []int) error { calls++; return stop }); err != stop || calls != 1 || st.steps != len(prompts[1]) {
		t.Errorf("emit failing: %v after %d calls and %d steps, want the error after 1 call and %d steps", err, calls, st.steps, len(prompts[1]))
	}
}

// TestNonFiniteLogitsStop: a model whose forward pass overflows (finite but
// huge weights) stops generation at its first step, with and without the
// cache, in the words inspect uses (model.NonFinite), instead of writing
// token 0 for every position.
func TestNonFiniteLogitsStop(t *testing.T) {
	cfg := model.Config{Vocab: 9, Context: 12, DModel: 16, Heads: 2, Layers: 1}
	m, err := model.New(cfg, tensor.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	qkv := m.Param("blocks.0.attn.qkv.weight").Data().([]float32)
	for i := range qkv {
		qkv[i] = 3e38
	}
	want := "non-finite activations: the logits at position 0 are NaN; the forward pass overflows float32 (largest |weight| 3e+38, in blocks.0.attn.qkv.weight)"
	for _, cached := range []bool{true, false} {
		st, err := New(m, 2, 12, cached)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewSampler(Greedy)
		out, err := Generate(st, [][]int{{1}, {2}}, []int{4, 4}, s, cfg.Vocab)
		if err == nil || err.Error() != want {
			t.Errorf("cached %v: wrote %v, error %v; want %q", cached, out, err, want)
		}
		st.Close()
	}
}

// TestMemoryNeed: with the cache it is the decoder's estimate; without, a
// Recompute graph's, which covers whole buckets of positions, and an
// absurd length is a finite figure past model.MaxMemory, not an overflow.
func TestMemoryNeed(t *testing.T) {
	m, err := model.New(model.Config{Vocab: 9, Context: 12, DModel: 16, Heads: 2, Layers: 1, Position: model.PositionRope}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MemoryNeed(m, 3, 100, true), m.DecodeBytes(3, 100); got != want {
		t.Errorf("cached: %v, DecodeBytes %v", got, want)
	}
	a, b, c := MemoryNeed(m, 2, RecomputeBucket+1, false), MemoryNeed(m, 2, 2*RecomputeBucket, false), MemoryNeed(m, 2, 2*RecomputeBucket+1, false)
	if a != b || c <= b {
		t.Errorf("no cache: %v at %d positions, %v at %d, %v at %d: want one figure per bucket", a, RecomputeBucket+1, b, 2*RecomputeBucket, c, 2*RecomputeBucket+1)
	}
	for _, cached := range []bool{true, false} {
		if got := MemoryNeed(m, 1024, math.MaxInt, cached); math.IsInf(got, 0) || got <= model.MaxMemory {
			t.Errorf("cached %v: %v for MaxInt positions", cached, got)
		}
	}
}

// TestStreamUntilStops: greedily, a row ends with the first token of the
// stop set it picks (kept as its last token), a row that never picks one
// runs to its length, and what each row wrote up to there is what Stream
// wrote. The set's ids each end a row first, so ignoring any one of them
// changes what is written.
func TestStreamUntilStops(t *testing.T) {
	cfg := model.Config{Vocab: 5, Context: 32, DModel: 16, Heads: 2, Layers: 1, Position: model.PositionALiBi}
	m, err := model.New(cfg, tensor.Float64, 3)
	if err != nil {
		t.Fatal(err)
	}
	prompts, n := [][]int{{1, 2}, {3}, {0}}, []int{20, 20, 20}
	run := func(stops []int) [][]int {
		st, err := New(m, len(prompts), 24, true)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		s, _ := NewSampler(Options{TopP: 1}) // greedy: a row's draws do not depend on the others'
		out, err := StreamUntil(st, prompts, n, s, cfg.Vocab, stops, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	free := run(nil)
	stops := []int{free[0][1], free[1][1]}
	stopped := run(stops)
	endedOn := map[int]bool{}
	for r := range prompts {
		cut := slices.IndexFunc(free[r], func(id int) bool { return slices.Contains(stops, id) })
		if cut < 0 {
			if !slices.Equal(stopped[r], free[r]) {
				t.Errorf("row %d never picked one of %v but wrote %v, not %v", r, stops, stopped[r], free[r])
			}
			continue
		}
		endedOn[free[r][cut]] = true
		if !slices.Equal(stopped[r], free[r][:cut+1]) {
			t.Errorf("row %d: wrote %v, want %v up to its first of %v", r, stopped[r], free[r][:cut+1], stops)
		}
	}
	for _, id := range stops {
		if !endedOn[id] {
			t.Fatalf("no row ends on %d of the stops %v: %v", id, stops, free)
		}
	}
}
