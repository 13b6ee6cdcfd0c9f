package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// TestReplicasEqualOneGraph: a batch split into ReplicaCount parts gives
// the loss and every gradient of one graph of the whole batch, within 1e-12
// in float64 and 1e-5 in float32 (relative to the largest entry, at least
// 1): both paths, attention-only and full blocks with dropout, even and
// odd batches, a batch of one row (one part), and batches where one part
// or every part has no scored position. Three runs of the same machines
// with different batches and dropout draws, so a value left from an
// earlier run would show.
func TestReplicasEqualOneGraph(t *testing.T) {
	for _, c := range []struct {
		dtype tensor.Dtype
		mlp   bool
		batch int
		path  layers.Path
	}{
		{tensor.Float64, false, 4, layers.Fused}, {tensor.Float64, true, 5, layers.Fused},
		{tensor.Float64, true, 3, layers.Gorgonia}, {tensor.Float64, false, 1, layers.Fused},
		{tensor.Float32, true, 4, layers.Fused}, {tensor.Float32, false, 3, layers.Gorgonia},
	} {
		name := fmt.Sprintf("%v,mlp=%t,B=%d,%s", c.dtype, c.mlp, c.batch, c.path)
		t.Run(name, func(t *testing.T) {
			const tt = 6
			tol := 1e-12
			if c.dtype == tensor.Float32 {
				tol = 1e-5
			}
			cfg := testConfig(c.mlp, c.path)
			m := randomModel(t, cfg, c.dtype)
			whole := mustBuild(t, m, BuildOptions{Batch: c.batch, SeqLen: tt, Train: true})
			vm := whole.NewLeanMachine()
			defer vm.Close()
			split, err := BuildReplicas(m, c.batch, tt)
			if err != nil {
				t.Fatal(err)
			}
			defer split.Close()
			if want := min(ReplicaCount, c.batch); len(split.Parts) != want {
				t.Fatalf("%d parts, want %d", len(split.Parts), want)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for step := range 3 {
				tokens, targets, mask := randomBatch(rng, c.batch*tt, cfg.Vocab)
				switch step {
				case 1: // the first part scores nothing
					clear(mask[:c.batch/2*tt])
				case 2: // nothing is scored
					clear(mask)
				}
				if err := whole.Feed(tokens, targets, mask); err != nil {
					t.Fatal(err)
				}
				if err := split.Feed(tokens, targets, mask); err != nil {
					t.Fatal(err)
				}
				seed := uint64(step)
				if err := whole.DrawDropout(cfg.Dropout, rand.New(rand.NewPCG(seed, 1))); err != nil {
					t.Fatal(err)
				}
				if err := split.DrawDropout(cfg.Dropout, rand.New(rand.NewPCG(seed, 1))); err != nil {
					t.Fatal(err)
				}
				run(t, vm)
				split.Reset()
				if err := split.RunAll(); err != nil {
					t.Fatal(err)
				}
				wantLoss, err := whole.LossValue()
				if err != nil {
					t.Fatal(err)
				}
				gotLoss, err := split.LossValue()
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(gotLoss-wantLoss) > tol*max(1, math.Abs(wantLoss)) {
					t.Errorf("step %d: loss %v, one graph %v", step, gotLoss, wantLoss)
				}
				want, err := whole.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				got, err := split.Gradients()
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					w, g := toFloat64s(want[i]), toFloat64s(got[i])
					scale := 1.0
					for _, x := range w {
						scale = max(scale, math.Abs(x))
					}
					for j := range w {
						if math.Abs(g[j]-w[j]) > tol*scale {
							t.Errorf("step %d: d loss/d %s[%d] = %v, one graph %v", step, m.Params[i].Name, j, g[j], w[j])
							break
						}
					}
				}
			}
		})
	}
}

// TestReplicasFeedErrors: a bad batch is refused before anything is copied,
// and the error names the position in the whole batch, not in a part.
func TestReplicasFeedErrors(t *testing.T) {
	cfg := testConfig(false, layers.Fused)
	m := randomModel(t, cfg, tensor.Float64)
	split, err := BuildReplicas(m, 4, 6)
	if err != nil {
		t.Fatal(err)
	}
	defer split.Close()
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 2)), 4*6, cfg.Vocab)
	tokens[20] = cfg.Vocab
	err = split.Feed(tokens, targets, mask)
	want := "feed: token id 7 at position 20 (batch 3, t 2) is outside the vocabulary [0, 7)"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if got := split.Parts[1].Tokens.Value().Data().([]int)[20-12]; got != 0 {
		t.Errorf("part 1 was fed token %d before the check failed", got)
	}
	if err := split.Feed(tokens[:5], targets, mask); err == nil {
		t.Error("a short batch was accepted")
	}
	if _, err := split.LossValue(); err == nil {
		t.Error("a loss before any run")
	}
}
