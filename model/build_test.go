package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

func testConfig(mlp bool, path layers.Path) Config {
	return Config{Vocab: 7, Context: 6, DModel: 8, Heads: 2, Layers: 2, MLP: mlp, DFF: 12,
		QKVBias: true, OutBias: true, LMBias: true, Dropout: 0.1, Attention: string(path)}
}

// eachPath runs f once per attention path, as a subtest named after it.
func eachPath(t *testing.T, f func(t *testing.T, path layers.Path)) {
	for _, path := range layers.Paths {
		t.Run(string(path), func(t *testing.T) { f(t, path) })
	}
}

// floats returns a node's value as float64s (a copy).
func floats(t *testing.T, n *gorgonia.Node) []float64 {
	t.Helper()
	return append([]float64(nil), graphtest.Values(t, n)...)
}

// feedRun feeds the batch to g and runs it once on a new machine (the
// values stay on the nodes after the machine is closed).
func feedRun(t *testing.T, g *Graph, tokens, targets []int, mask []float64) {
	t.Helper()
	if err := g.Feed(tokens, targets, mask); err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	run(t, vm)
}

// mustNew is New(cfg, dtype, seed), failing the test on an error.
func mustNew(t *testing.T, cfg Config, dtype tensor.Dtype, seed uint64) *Model {
	t.Helper()
	m, err := New(cfg, dtype, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mustBuild builds m for opts; unless opts names a Cache of its own, the
// graph keeps every layer's attention weights, which the tests read.
func mustBuild(t *testing.T, m *Model, opts BuildOptions) *Graph {
	t.Helper()
	if opts.Cache == nil {
		for l := range m.Config.Layers {
			opts.Cache = append(opts.Cache, AttnWeights(l))
		}
	}
	g, err := Build(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestBuildMatchesReference: Logits, every layer's Attention and Loss equal
// refForward (plain-Go float64, per position and head) within 1e-12 absolute,
// for attention-only and full blocks, with and without key padding, on
// eval and Train graphs, down to B = T = 1 (dropout masks left at 1), over two runs of one
// machine with different batches (so a reused buffer would show).
func TestBuildMatchesReference(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		for ci, c := range []struct {
			b, tt              int
			mlp, keyPad, train bool
		}{
			{3, 5, false, false, false}, {3, 5, true, false, false}, {3, 5, false, true, true}, {3, 5, true, true, true},
			{3, 5, true, false, true}, {1, 1, true, false, true}, {1, 6, false, false, false},
		} {
			b, tt := c.b, c.tt
			t.Run(fmt.Sprintf("B%dT%d,mlp=%t,keypad=%t,train=%t", b, tt, c.mlp, c.keyPad, c.train), func(t *testing.T) {
				m := mustNew(t, testConfig(c.mlp, path), tensor.Float64, 5)
				randomize(m, uint64(ci), 0.5)
				g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: c.train, KeyPadding: c.keyPad})
				vm := g.NewMachine()
				defer vm.Close()
				rng := rand.New(rand.NewPCG(5, uint64(ci)))
				for step := 0; step < 2; step++ {
					tokens, targets, mask := randomBatch(rng, b*tt, m.Config.Vocab)
					if err := g.Feed(tokens, targets, mask); err != nil {
						t.Fatal(err)
					}
					var km []float64
					if c.keyPad {
						km = g.KeyMask.Value().Data().([]float64)
						for i := range km {
							km[i] = 1
							if rng.IntN(4) == 0 {
								km[i] = 0
							}
						}
					}
					run(t, vm)
					logits, attention, loss := refForward(m, b, tt, tokens, targets, mask, km, nil)
					if e := graphtest.MaxAbsDiff(t, floats(t, g.Logits), logits); e > 1e-12 {
						t.Errorf("step %d: logits differ from reference by %.3g", step, e)
					}
					for l, a := range attentionNodes(g) {
						if e := graphtest.MaxAbsDiff(t, floats(t, a), attention[l]); e > 1e-12 {
							t.Errorf("step %d: layer %d attention differs from reference by %.3g", step, l, e)
						}
					}
					if e := math.Abs(lossOf(t, g) - loss); e > 1e-12 {
						t.Errorf("step %d: loss %v, reference %v", step, lossOf(t, g), loss)
					}
				}
			})
		}
	})
}

// TestModelCausality: changing the tokens at positions > t leaves the logits
// and every layer's attention weights of positions <= t bitwise unchanged.
func TestModelCausality(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		const b, tt = 2, 6
		m := mustNew(t, testConfig(true, path), tensor.Float64, 9)
		randomize(m, 9, 0.5)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt})
		vm := g.NewMachine()
		defer vm.Close()
		rng := rand.New(rand.NewPCG(9, 9))
		tokens, targets, mask := randomBatch(rng, b*tt, m.Config.Vocab)
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		run(t, vm)
		baseLogits := floats(t, g.Logits)
		var baseAtt [][]float64
		for _, a := range attentionNodes(g) {
			baseAtt = append(baseAtt, floats(t, a))
		}
		v, h := m.Config.Vocab, m.Config.Heads
		for cut := 0; cut < tt-1; cut++ {
			changed := append([]int(nil), tokens...)
			for bi := 0; bi < b; bi++ {
				for pos := cut + 1; pos < tt; pos++ {
					changed[bi*tt+pos] = (changed[bi*tt+pos] + 1 + rng.IntN(v-1)) % v
				}
			}
			if err := g.Feed(changed, targets, mask); err != nil {
				t.Fatal(err)
			}
			run(t, vm)
			logits := floats(t, g.Logits)
			for bi := 0; bi < b; bi++ {
				for pos := 0; pos <= cut; pos++ {
					r := bi*tt + pos
					for j := 0; j < v; j++ {
						if logits[r*v+j] != baseLogits[r*v+j] {
							t.Fatalf("cut %d: logits of (b %d, t %d) changed", cut, bi, pos)
						}
					}
					for l, a := range attentionNodes(g) {
						w := floats(t, a)
						for hi := 0; hi < h; hi++ {
							for k := 0; k < tt; k++ {
								if i := ((bi*h+hi)*tt+pos)*tt + k; w[i] != baseAtt[l][i] {
									t.Fatalf("cut %d: layer %d attention (b %d, h %d, q %d, k %d) changed", cut, l, bi, hi, pos, k)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestWeightsBoundByReference: changing a model tensor in place changes the
// next run of an already-built machine, to exactly the reference output for
// the new weights (1e-12).
func TestWeightsBoundByReference(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		const b, tt = 2, 4
		m := mustNew(t, testConfig(false, path), tensor.Float64, 4)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt})
		vm := g.NewMachine()
		defer vm.Close()
		tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(4, 4)), b*tt, m.Config.Vocab)
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		run(t, vm)
		before := floats(t, g.Logits)
		w := m.Param("lm_head.weight").Float64s()
		for i := range w {
			w[i] += 0.5
		}
		run(t, vm)
		after := floats(t, g.Logits)
		if graphtest.MaxAbsDiff(t, before, after) == 0 {
			t.Fatal("logits did not change after the model's lm_head.weight was changed in place")
		}
		want, _, _ := refForward(m, b, tt, tokens, targets, mask, nil, nil)
		if e := graphtest.MaxAbsDiff(t, after, want); e > 1e-12 {
			t.Errorf("logits after the in-place change differ from the reference by %.3g", e)
		}
	})
}

// TestDeterminism: the same seed gives bitwise identical weights and first
// training-step loss and gradients; another seed gives different weights.
func TestDeterminism(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		cfg := testConfig(true, path)
		firstStep := func(seed uint64) (*Model, float64, []float64) {
			m := mustNew(t, cfg, tensor.Float32, seed)
			g := mustBuild(t, m, BuildOptions{Batch: 2, SeqLen: 6, Train: true})
			vm := g.NewMachine()
			defer vm.Close()
			tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(seed, 1)), 12, cfg.Vocab)
			if err := g.Feed(tokens, targets, mask); err != nil {
				t.Fatal(err)
			}
			run(t, vm)
			grads, err := g.Gradients()
			if err != nil {
				t.Fatal(err)
			}
			var flat []float64
			for _, gr := range grads {
				flat = append(flat, f64(gr)...)
			}
			return m, lossOf(t, g), flat
		}
		m1, loss1, g1 := firstStep(42)
		m2, loss2, g2 := firstStep(42)
		m3, _, _ := firstStep(43)
		for i := range m1.Params {
			a, b := f64(m1.Params[i].Value), f64(m2.Params[i].Value)
			for j := range a {
				if math.Float64bits(a[j]) != math.Float64bits(b[j]) {
					t.Fatalf("seed 42 twice: %s[%d] differs", m1.Params[i].Name, j)
				}
			}
		}
		if math.Float64bits(loss1) != math.Float64bits(loss2) {
			t.Errorf("seed 42 twice: first-step loss %v vs %v", loss1, loss2)
		}
		for j := range g1 {
			if math.Float64bits(g1[j]) != math.Float64bits(g2[j]) {
				t.Fatalf("seed 42 twice: gradient entry %d differs", j)
			}
		}
		if graphtest.MaxAbsDiff(t, f64(m1.Params[0].Value), f64(m3.Params[0].Value)) == 0 {
			t.Error("seeds 42 and 43 give the same tok_emb.weight")
		}
	})
}

// TestInitialLoss: an untrained model (std 0.02 weights) on uniformly random
// targets has loss ln(V) within 0.1, in float32 and float64.
func TestInitialLoss(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
			for _, mlp := range []bool{false, true} {
				cfg := testConfig(mlp, path)
				cfg.Vocab, cfg.Context = 16, 8
				m := mustNew(t, cfg, dt, 1)
				g := mustBuild(t, m, BuildOptions{Batch: 8, SeqLen: 8})
				rng := rand.New(rand.NewPCG(2, 3))
				tokens, targets, _ := randomBatch(rng, 64, cfg.Vocab)
				mask := ones(64)
				feedRun(t, g, tokens, targets, mask)
				if loss := lossOf(t, g); math.Abs(loss-math.Log(16)) > 0.1 {
					t.Errorf("%v mlp=%t: initial loss %v, want ln 16 = %v within 0.1", dt, mlp, loss, math.Log(16))
				}
			}
		}
	})
}

// TestFloat32MatchesFloat64: the same seed in float32 and float64 gives loss
// within 1e-5 and gradients within 1e-4 relative (per tensor, L2 norm).
func TestFloat32MatchesFloat64(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		cfg := testConfig(true, path)
		var losses []float64
		var grads [][]*tensor.Dense
		for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
			m := mustNew(t, cfg, dt, 8)
			randomize(m, 8, 0.3)
			g := mustBuild(t, m, BuildOptions{Batch: 2, SeqLen: 6, Train: true, KeyPadding: true})
			tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(8, 8)), 12, cfg.Vocab)
			feedRun(t, g, tokens, targets, mask)
			gr, err := g.Gradients()
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, lossOf(t, g))
			grads = append(grads, gr)
		}
		if e := math.Abs(losses[0] - losses[1]); e > 1e-5 {
			t.Errorf("float32 loss differs from float64 by %.3g", e)
		}
		for i := range grads[0] {
			a, b := f64(grads[0][i]), f64(grads[1][i])
			var diff, norm float64
			for j := range a {
				diff += (a[j] - b[j]) * (a[j] - b[j])
				norm += a[j] * a[j]
			}
			if rel := math.Sqrt(diff / math.Max(norm, 1e-300)); rel > 1e-4 {
				t.Errorf("tensor %d: float32 gradient differs by %.3g relative", i, rel)
			}
		}
	})
}

// TestTrainAttentionIsBeforeDropout: on a Train graph with a dropout mask
// containing zeros, the Attention outputs are the softmax weights (causal
// rows sum to 1 within 1e-12, above-diagonal exactly 0), not the dropped ones.
func TestTrainAttentionIsBeforeDropout(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		const b, tt = 2, 5
		cfg := testConfig(false, path)
		cfg.Dropout = 0.5
		m := mustNew(t, cfg, tensor.Float64, 6)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true})
		rng := rand.New(rand.NewPCG(6, 6))
		for _, dm := range g.DropoutMasks {
			d := dm.Value().Data().([]float64)
			for i := range d {
				d[i] = float64(rng.IntN(2)) * 2
			}
		}
		tokens, targets, mask := randomBatch(rng, b*tt, cfg.Vocab)
		feedRun(t, g, tokens, targets, mask)
		for l, a := range attentionNodes(g) {
			w := floats(t, a)
			for row := 0; row < len(w)/tt; row++ {
				i := row % tt
				var sum float64
				for j := 0; j < tt; j++ {
					if j > i && w[row*tt+j] != 0 {
						t.Fatalf("layer %d row %d: future key %d has weight %v", l, row, j, w[row*tt+j])
					}
					sum += w[row*tt+j]
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Fatalf("layer %d row %d sums to %v", l, row, sum)
				}
			}
		}
	})
}

// TestFeedErrors: wrong lengths and ids outside [0, V) are rejected with the
// id, position and vocabulary named, and nothing is copied.
func TestFeedErrors(t *testing.T) {
	m := mustNew(t, testConfig(false, layers.Fused), tensor.Float64, 1)
	g := mustBuild(t, m, BuildOptions{Batch: 2, SeqLen: 3})
	good := []int{0, 1, 2, 3, 4, 5}
	mask := ones(6)
	bad := []int{0, 1, 2, 3, 7, 5}
	cases := []struct {
		tokens, targets []int
		mask            []float64
		want            string
	}{
		{good[:5], good, mask, "5 tokens, want B*T = 2*3 = 6"},
		{good, good, mask[:4], "4 loss mask, want B*T = 2*3 = 6"},
		{bad, good, mask, "token id 7 at position 4 (batch 1, t 1) is outside the vocabulary [0, 7)"},
		{good, []int{0, -1, 0, 0, 0, 0}, mask, "target id -1 at position 1 (batch 0, t 1) is outside the vocabulary [0, 7)"},
	}
	for _, c := range cases {
		err := g.Feed(c.tokens, c.targets, c.mask)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Feed: error %v, want it to contain %q", err, c.want)
		}
	}
	if got := g.Tokens.Value().Data().([]int); got[4] != 0 {
		t.Errorf("a failed Feed wrote tokens %v", got)
	}
}

// TestBuildErrors: impossible options or models fail before anything is
// built, naming the numbers; Gradients needs a Train graph.
func TestBuildErrors(t *testing.T) {
	m := mustNew(t, testConfig(false, layers.Fused), tensor.Float64, 1)
	short := &Model{Config: m.Config, Dtype: m.Dtype, Params: m.Params[:3]}
	bad := &Model{Config: m.Config, Dtype: m.Dtype, Params: append([]Param(nil), m.Params...)}
	bad.Params[1] = Param{Name: "pos_emb.weight", Value: tensor.New(tensor.Of(tensor.Float64), tensor.WithShape(5, 8))}
	cases := []struct {
		m    *Model
		opts BuildOptions
		want string
	}{
		{nil, BuildOptions{Batch: 1, SeqLen: 1}, "nil model"},
		{m, BuildOptions{Batch: 0, SeqLen: 1}, "batch 0 must be positive"},
		{m, BuildOptions{Batch: 1, SeqLen: 7}, "seq len 7 must be in [1, context 6]"},
		{m, BuildOptions{Batch: 1, SeqLen: 0}, "seq len 0 must be in [1, context 6]"},
		{short, BuildOptions{Batch: 1, SeqLen: 2}, "model has 3 tensors, its config needs"},
		{bad, BuildOptions{Batch: 1, SeqLen: 2}, `tensor "pos_emb.weight" is float64 (5, 8), want float64 [6 8]`},
	}
	for _, c := range cases {
		_, err := Build(c.m, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build: error %v, want it to contain %q", err, c.want)
		}
	}
	g := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 2})
	if _, err := g.Gradients(); err == nil {
		t.Error("Gradients on an eval graph did not fail")
	}
	if g.DropoutMasks != nil || g.KeyMask != nil {
		t.Error("eval graph without KeyPadding has dropout masks or a key mask")
	}
}

// TestGradientsArePerRun: Gradients returns the last run's gradient, equal
// bitwise over repeated runs on the same batch, while the dual values bound
// for gorgonia solvers accumulate (pinned: 3 runs give 3x, within 1e-15).
func TestGradientsArePerRun(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		m := mustNew(t, testConfig(false, path), tensor.Float64, 1)
		g := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 3, Train: true})
		if err := g.Feed([]int{1, 2, 3}, []int{2, 3, 4}, ones(3)); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		defer vm.Close()
		var first []float64
		for i := 0; i < 3; i++ {
			run(t, vm)
			grads, err := g.Gradients()
			if err != nil {
				t.Fatal(err)
			}
			got := f64(grads[0])
			if first == nil {
				first = got
			} else if graphtest.MaxAbsDiff(t, first, got) != 0 {
				t.Fatalf("run %d: gradient changed by %.3g", i, graphtest.MaxAbsDiff(t, first, got))
			}
		}
		dv, err := g.Params[0].Grad()
		if err != nil {
			t.Fatal(err)
		}
		acc := dv.Data().([]float64)
		for j := range first {
			if math.Abs(acc[j]-3*first[j]) > 1e-15 {
				t.Fatalf("dual value %v after 3 runs, want 3 x %v", acc[j], first[j])
			}
		}
	})
}

// attentionNodes are the graph's attention weights, layer by layer.
func attentionNodes(g *Graph) []*gorgonia.Node {
	var out []*gorgonia.Node
	for l := range g.Model.Config.Layers {
		out = append(out, g.Activations[AttnWeights(l)])
	}
	return out
}

// activationNodes are every activation the graph names.
func activationNodes(g *Graph) []*gorgonia.Node {
	var out []*gorgonia.Node
	for _, name := range g.ActivationNames() {
		out = append(out, g.Activations[name])
	}
	return out
}
