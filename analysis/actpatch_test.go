package analysis

import (
	"math"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
)

// patchCase is a model and a clean and corrupted input of it.
type patchCase struct {
	name           string
	m              *model.Model
	clean, corrupt [][]int
}

// patchCases are the committed induction run (a repeated block, its first
// copy corrupted) and a random GPT-2 of two blocks with MLPs, two
// sequences each.
func patchCases(t *testing.T) []patchCase {
	gpt2, err := open.Open(opentest.GPT2Dir(t, model.Config{Vocab: 40, Context: 16, DModel: 16, Heads: 2, Layers: 2, DFF: 32}), open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return []patchCase{
		{"induction", opentest.Induction(t).Model,
			[][]int{{3, 7, 1, 9, 3, 7, 1, 9}, {5, 2, 8, 4, 5, 2, 8, 4}},
			[][]int{{11, 12, 13, 14, 3, 7, 1, 9}, {15, 16, 17, 18, 5, 2, 8, 4}}},
		{"gpt2", gpt2.Model,
			[][]int{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}},
			[][]int{{1, 20, 3, 4, 21, 6}, {7, 8, 22, 10, 11, 23}}},
	}
}

// plainPatch is the metric of corrupt run with kind's activation of block
// l set to the clean cache's at head h and position pos (-1: every one),
// by a hook of RunTokensWithHooks that indexes the graph's layout by hand:
// rows (B*T, D) or (B, H, T, X). It shares no code with patcher but the
// forward.
func plainPatch(t *testing.T, clean *Cache, corrupt [][]int, kind string, l, h, pos int, metric Metric) float64 {
	t.Helper()
	src, err := clean.Get(PatchName(kind, l))
	if err != nil {
		t.Fatal(err)
	}
	b, n := len(corrupt), len(corrupt[0])
	set := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		v := x.Data().([]float32)
		shape := x.Shape()
		if len(shape) == 2 { // (B*T, D)
			d := shape[1]
			for row := range b * n {
				if pos < 0 || row%n == pos {
					copy(v[row*d:(row+1)*d], src.f32[row*d:(row+1)*d])
				}
			}
			return x, nil
		}
		heads, width := shape[1], shape[3] // (B, H, T, X)
		for i := range v {
			hi, p := i/(n*width)%heads, i/width%n
			if (h < 0 || hi == h) && (pos < 0 || p == pos) {
				v[i] = src.f32[i]
			}
		}
		return x, nil
	}
	c, err := RunTokensWithHooks(clean.Model, corrupt, []Hook{{Name: PatchName(kind, l), Fn: set}})
	if err != nil {
		t.Fatal(err)
	}
	return measure(t, metric, c.Logits)
}

// measure is metric of logits, failing the test on an error.
func measure(t *testing.T, metric Metric, logits Logits) float64 {
	t.Helper()
	v, err := metric(logits)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestActivationPatchingIsAPlainLoop: every figure of PatchStream (each
// stream kind the model has, by the loss) and PatchHeads (each head kind,
// over every position and at each, by logit difference) equals the
// metric of a plain loop that patches that one component in a run of its
// own (float32 models: within 1e-5), on the induction run and a GPT-2;
// and patching resid_pre of block 0 at a position is running the
// corrupted input with the clean token put back there.
func TestActivationPatchingIsAPlainLoop(t *testing.T) {
	for _, tc := range patchCases(t) {
		cfg := tc.m.Config
		n := len(tc.clean[0])
		clean, err := RunTokensWithCache(tc.m, tc.clean, "blocks.*.hook_*", "blocks.*.attn.hook_*")
		if err != nil {
			t.Fatal(err)
		}
		loss, diff := LossMetric(tc.clean), LogitDiffMetric(n, tc.clean[0][n-1], tc.corrupt[0][1])
		check := func(what string, got, want float64) {
			if math.Abs(got-want) > 1e-5 || math.IsNaN(got) {
				t.Errorf("%s %s: patched %v, the plain loop %v", tc.name, what, got, want)
			}
		}
		for _, kind := range StreamKinds {
			if kind == "resid_mid" || kind == "mlp_out" {
				if !cfg.MLP {
					continue
				}
			}
			p, err := PatchStream(clean, tc.corrupt, kind, loss, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := []int{cfg.Layers, n}; !slices.Equal(p.Values.Shape, want) {
				t.Fatalf("%s %s: shape %v, want %v", tc.name, kind, p.Values.Shape, want)
			}
			check(kind+" clean", p.Clean, measure(t, loss, clean.Logits))
			check(kind+" corrupted", p.Corrupted, plainPatch(t, clean, tc.corrupt, kind, 0, -1, n+1, loss))
			for l := range cfg.Layers {
				for pos := range n {
					check(kind, p.Values.At(l*n+pos), plainPatch(t, clean, tc.corrupt, kind, l, -1, pos, loss))
				}
			}
			if moved(p) == 0 {
				t.Errorf("%s %s: no patch moves the loss from the corrupted run's %v", tc.name, kind, p.Corrupted)
			}
			if kind == "resid_pre" {
				for pos := range n {
					put := [][]int{slices.Clone(tc.corrupt[0]), slices.Clone(tc.corrupt[1])}
					put[0][pos], put[1][pos] = tc.clean[0][pos], tc.clean[1][pos]
					c, err := RunTokensWithCache(tc.m, put)
					if err != nil {
						t.Fatal(err)
					}
					check("resid_pre of block 0, the clean token put back", p.Values.At(pos), measure(t, loss, c.Logits))
				}
			}
		}
		for _, kind := range HeadKinds {
			all, err := PatchHeads(clean, tc.corrupt, kind, false, diff, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			byPos, err := PatchHeads(clean, tc.corrupt, kind, true, diff, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if moved(all) == 0 || moved(byPos) == 0 {
				t.Errorf("%s %s: no patch moves the logit difference from the corrupted run's %v", tc.name, kind, all.Corrupted)
			}
			if want := []int{cfg.Layers, cfg.Heads, n}; !slices.Equal(byPos.Values.Shape, want) {
				t.Fatalf("%s %s: shape %v, want %v", tc.name, kind, byPos.Values.Shape, want)
			}
			for l := range cfg.Layers {
				for h := range cfg.Heads {
					check(kind+" all positions", all.Values.At(l*cfg.Heads+h), plainPatch(t, clean, tc.corrupt, kind, l, h, -1, diff))
					for pos := range n {
						check(kind+" by position", byPos.Values.At((l*cfg.Heads+h)*n+pos), plainPatch(t, clean, tc.corrupt, kind, l, h, pos, diff))
					}
				}
			}
		}
	}
}

// moved is how many of p's figures differ from the corrupted run's.
func moved(p *ActivationPatching) int {
	k := 0
	for i := range p.Values.Len() {
		if p.Values.At(i) != p.Corrupted {
			k++
		}
	}
	return k
}

// TestActivationPatchingSomeHeads: given heads, PatchHeads patches those
// alone (progress counts them) with the figures of the whole run, the
// others NaN, and PatchStream the layers they lie in; ActivationPatchWork
// counts the same runs.
func TestActivationPatchingSomeHeads(t *testing.T) {
	tc := patchCases(t)[0]
	n := len(tc.clean[0])
	clean, err := RunTokensWithCache(tc.m, tc.clean, "blocks.*.attn.hook_z", "blocks.*.hook_resid_post")
	if err != nil {
		t.Fatal(err)
	}
	diff := LogitDiffMetric(n, tc.clean[0][n-1], tc.corrupt[0][1])
	every, err := PatchHeads(clean, tc.corrupt, "z", false, diff, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := ablation.Heads{{1, 3}, {0, 1}}
	var heard []int
	some, err := PatchHeads(clean, tc.corrupt, "z", false, diff, hs, func(done, total int) {
		if total != 2 {
			t.Errorf("progress total %d, want 2", total)
		}
		heard = append(heard, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(heard, []int{0, 1, 2}) {
		t.Errorf("progress heard %v, want [0 1 2]", heard)
	}
	for i := range some.Values.Len() {
		l, h := i/tc.m.Config.Heads, i%tc.m.Config.Heads
		picked := slices.Contains(hs, [2]int{l, h})
		if got := some.Values.At(i); picked && got != every.Values.At(i) || !picked && !math.IsNaN(got) {
			t.Errorf("L%d H%d: %v given %v, %v over every head", l, h, got, hs, every.Values.At(i))
		}
	}
	stream, err := PatchStream(clean, tc.corrupt, "resid_post", diff, ablation.Heads{{1, 0}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(stream.Values.At(0)) || math.IsNaN(stream.Values.At(n)) {
		t.Errorf("resid_post with a head of layer 1: layer 0 %v, layer 1 %v; want NaN and a figure", stream.Values.At(0), stream.Values.At(n))
	}
	w, err := ActivationPatchWork(tc.m.Config, "z", true, hs, 2, n)
	if err != nil || w.Forwards != 1+2*n {
		t.Errorf("z by position on 2 heads: %d forwards (%v), want %d", w.Forwards, err, 1+2*n)
	}
}

// TestActivationPatchingRefuses: a kind the model has not, corrupted
// input of another shape, a clean run that did not keep the activation,
// a metric's token outside the vocabulary and no heads to patch are
// refused.
func TestActivationPatchingRefuses(t *testing.T) {
	tc := patchCases(t)[0]
	clean, err := RunTokensWithCache(tc.m, tc.clean, "blocks.*.attn.hook_z")
	if err != nil {
		t.Fatal(err)
	}
	diff := LogitDiffMetric(8, 1, 2)
	for what, call := range map[string]func() error{
		"mlp_out of an attention-only model": func() error {
			_, err := PatchStream(clean, tc.corrupt, "mlp_out", diff, nil, nil)
			return err
		},
		"a head kind by position": func() error { _, err := PatchStream(clean, tc.corrupt, "z", diff, nil, nil); return err },
		"a shorter corruption": func() error {
			_, err := PatchHeads(clean, [][]int{{1, 2, 3}, {1, 2, 3}}, "z", false, diff, nil, nil)
			return err
		},
		"an activation not kept": func() error { _, err := PatchHeads(clean, tc.corrupt, "q", false, diff, nil, nil); return err },
		"a token outside the vocabulary": func() error {
			_, err := PatchHeads(clean, tc.corrupt, "z", false, LogitDiffMetric(8, 1, tc.m.Config.Vocab), nil, nil)
			return err
		},
		"no heads": func() error {
			_, err := PatchHeads(clean, tc.corrupt, "z", false, diff, ablation.Heads{}, nil)
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
}

// TestActivationPatchingGroupedHeads: on a Llama whose 4 query heads
// share 2 key-value heads (q (H, B, T, d), k and v (G, B, T, d) in the
// graph) PatchHeads of q, k and v by position equals a hooked run that
// indexes those layouts by hand, k and v over the 2 kv heads.
func TestActivationPatchingGroupedHeads(t *testing.T) {
	op, err := open.Open("../open/hf/testdata/llama", open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, cfg := op.Model, op.Model.Config
	cleanSeqs, corrupt := [][]int{{1, 5, 9, 13, 5, 9}, {2, 6, 10, 14, 6, 10}}, [][]int{{1, 5, 20, 13, 5, 9}, {2, 30, 10, 14, 6, 10}}
	b, n := len(cleanSeqs), len(cleanSeqs[0])
	clean, err := RunTokensWithCache(m, cleanSeqs, "blocks.*.attn.hook_*")
	if err != nil {
		t.Fatal(err)
	}
	diff := LogitDiffMetric(n, 7, 8)
	for _, kind := range []string{"q", "k", "v"} {
		p, err := PatchHeads(clean, corrupt, kind, true, diff, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		heads := p.Values.Shape[1]
		if want := map[string]int{"q": cfg.Heads, "k": 2, "v": 2}[kind]; heads != want {
			t.Fatalf("%s: %d heads, want %d", kind, heads, want)
		}
		for l := range cfg.Layers {
			src, err := clean.Get(PatchName(kind, l))
			if err != nil {
				t.Fatal(err)
			}
			for h := range heads {
				for pos := range n {
					set := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
						v, d := x.Float32s(), x.Shape()[3] // (heads, B, T, d)
						for row := range b {
							at := ((h*b+row)*n + pos) * d
							copy(v[at:at+d], src.f32[at:at+d])
						}
						return x, nil
					}
					c, err := RunTokensWithHooks(m, corrupt, []Hook{{Name: PatchName(kind, l), Fn: set}})
					if err != nil {
						t.Fatal(err)
					}
					if got, want := p.Values.At((l*heads+h)*n+pos), measure(t, diff, c.Logits); math.Abs(got-want) > 1e-5 {
						t.Errorf("%s L%d H%d pos %d: patched %v, the hooked run %v", kind, l, h, pos, got, want)
					}
				}
			}
		}
		if moved(p) == 0 {
			t.Errorf("%s: no patch moves the metric from %v", kind, p.Corrupted)
		}
	}
}
