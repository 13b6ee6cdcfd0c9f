package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// TestOutputsMatchReference: on a Train graph, DrawDropout(0.5) from a seeded
// stream draws the same masks as layers.FillDropoutMask filling one fresh
// (B, H, T, T) tensor per layer from that stream, in layer order; every entry
// is 0 or 2. After a run, LossValue, LogitsValue and AttentionValue(l) equal
// refForward with those masks within 1e-12, on every attention path.
func TestOutputsMatchReference(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		const b, tt, p, seed = 2, 5, 0.5, 17
		cfg := testConfig(true, path)
		cfg.Dropout = p
		m := mustNew(t, cfg, tensor.Float64, 3)
		randomize(m, 3, 0.5)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true})
		if err := g.DrawDropout(p, rand.New(rand.NewPCG(seed, 1))); err != nil {
			t.Fatal(err)
		}
		want := rand.New(rand.NewPCG(seed, 1))
		masks := make([][]float64, cfg.Layers)
		for l := range masks {
			d := tensor.New(tensor.WithShape(b, cfg.Heads, tt, tt), tensor.Of(tensor.Float64))
			if err := layers.FillDropoutMask(d, p, want); err != nil {
				t.Fatal(err)
			}
			masks[l] = d.Data().([]float64)
			if e := graphtest.MaxAbsDiff(t, floats(t, g.DropoutMasks[l]), masks[l]); e != 0 {
				t.Fatalf("layer %d: DrawDropout's mask differs from FillDropoutMask's by %v", l, e)
			}
			for i, v := range masks[l] {
				if v != 0 && v != 2 {
					t.Fatalf("layer %d mask[%d] = %v, want 0 or 2", l, i, v)
				}
			}
		}
		rng := rand.New(rand.NewPCG(3, 3))
		tokens, targets, lossMask := randomBatch(rng, b*tt, cfg.Vocab)
		feedRun(t, g, tokens, targets, lossMask)
		logits, attention, loss := refForward(m, b, tt, tokens, targets, lossMask, nil, masks)
		got, err := g.LossValue()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-loss) > 1e-12 {
			t.Errorf("LossValue %v, reference %v", got, loss)
		}
		out, err := g.LogitsValue()
		if err != nil {
			t.Fatal(err)
		}
		if e := graphtest.MaxAbsDiff(t, f64(out), logits); e > 1e-12 {
			t.Errorf("LogitsValue differs from the reference by %.3g", e)
		}
		for l := range cfg.Layers {
			a, err := g.Activation(AttnWeights(l))
			if err != nil {
				t.Fatal(err)
			}
			if e := graphtest.MaxAbsDiff(t, f64(a), attention[l]); e > 1e-12 {
				t.Errorf("AttentionValue(%d) differs from the reference by %.3g", l, e)
			}
		}
	})
}

// TestOutputsFloat32: on a float32 model the readers return the float32 run's
// values: LossValue within 1e-5 of the float64 model's loss with the same
// weights, LogitsValue a Float32 tensor of shape (B*T, V).
func TestOutputsFloat32(t *testing.T) {
	const b, tt = 2, 4
	cfg := testConfig(false, layers.Fused)
	losses := map[tensor.Dtype]float64{}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		m := mustNew(t, cfg, dt, 9)
		g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt})
		tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(9, 9)), b*tt, cfg.Vocab)
		if err := g.Feed(tokens, targets, mask); err != nil {
			t.Fatal(err)
		}
		vm := g.NewMachine()
		run(t, vm)
		var err error
		if losses[dt], err = g.LossValue(); err != nil {
			t.Fatal(err)
		}
		out, err := g.LogitsValue()
		if err != nil {
			t.Fatal(err)
		}
		if out.Dtype() != dt || !out.Shape().Eq(tensor.Shape{b * tt, cfg.Vocab}) {
			t.Errorf("%v: LogitsValue is %v %v, want %v (%d, %d)", dt, out.Dtype(), out.Shape(), dt, b*tt, cfg.Vocab)
		}
		vm.Close()
	}
	if e := math.Abs(losses[tensor.Float32] - losses[tensor.Float64]); e > 1e-5 {
		t.Errorf("float32 loss %v, float64 loss %v", losses[tensor.Float32], losses[tensor.Float64])
	}
}

// TestOutputsErrors: a layer outside [0, Layers) is named in the error, a
// dropout probability outside [0, 1) is rejected, and a graph without
// dropout masks (not Train) has nothing to draw.
func TestOutputsErrors(t *testing.T) {
	cfg := testConfig(false, layers.Fused)
	m := mustNew(t, cfg, tensor.Float64, 1)
	eval := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 3})
	if _, err := eval.Activation(HeadOut(0)); err == nil || !strings.Contains(err.Error(), "built without it in BuildOptions.Cache") {
		t.Errorf("Activation(%s) of a graph that does not keep it: %v", HeadOut(0), err)
	}
	has := `the graph has tok_emb, pos_emb, blocks.N.{resid_pre, attn.q, attn.k, attn.v, attn.scores, attn.weights, attn.head_out, attn.result, attn_out, resid_post} for N in 0..1, logits`
	if _, err := eval.Activation(AttnWeights(cfg.Layers)); err == nil || !strings.Contains(err.Error(), `no activation "blocks.2.attn.weights": `+has) {
		t.Errorf("Activation of a layer the graph does not have: %v", err)
	}
	for _, opts := range []BuildOptions{{Cache: []string{"blocks.9.attn.weights"}}, {Hooks: []string{"blocks.*.mlp_out"}}} {
		opts.Batch, opts.SeqLen = 1, 3
		if _, err := Build(m, opts); err == nil || !strings.Contains(err.Error(), has) || strings.Contains(err.Error(), "\n") {
			t.Errorf("a name the graph does not have (%v): %v", opts, err)
		}
	}
	if err := eval.DrawDropout(0.5, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Errorf("DrawDropout on an eval graph: %v", err)
	}
	train := mustBuild(t, m, BuildOptions{Batch: 1, SeqLen: 3, Train: true})
	if err := train.DrawDropout(1, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "[0, 1)") {
		t.Errorf("DrawDropout(1): error %v, want one naming [0, 1)", err)
	}
}

// TestFloat64s: float32 and float64 values come back as equal float64 copies
// that do not share the value's memory; other data and no value are errors.
func TestFloat64s(t *testing.T) {
	for _, v := range []*tensor.Dense{
		tensor.New(tensor.WithShape(3), tensor.WithBacking([]float32{1.5, -2, 0.25})),
		tensor.New(tensor.WithShape(3), tensor.WithBacking([]float64{1.5, -2, 0.25})),
	} {
		got, err := Float64s(v)
		if err != nil || len(got) != 3 || got[0] != 1.5 || got[1] != -2 || got[2] != 0.25 {
			t.Fatalf("%v: Float64s = %v, %v; want [1.5 -2 0.25]", v.Dtype(), got, err)
		}
		got[0] = 9
		if v.Dtype() == tensor.Float64 && v.Data().([]float64)[0] != 1.5 {
			t.Errorf("Float64s shares the float64 value's memory")
		}
	}
	if _, err := Float64s(tensor.New(tensor.WithShape(2), tensor.WithBacking([]int{1, 2}))); err == nil {
		t.Error("Float64s of int data: no error")
	}
	if _, err := Float64s(nil); err == nil {
		t.Error("Float64s(nil): no error")
	}
}
