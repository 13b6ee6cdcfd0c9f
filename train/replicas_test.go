package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
)

// replicaConfig is a small two-layer model with dropout, attention-only or
// with MLP blocks, on the given path.
func replicaConfig(mlp bool, path layers.Path) model.Config {
	return model.Config{Vocab: 7, Context: 6, DModel: 8, Heads: 2, Layers: 2, MLP: mlp, DFF: 12,
		QKVBias: true, OutBias: true, LMBias: true, Dropout: 0.1, Attention: string(path)}
}

// replicaModel is model.New(cfg, dtype, 5) with every weight moved by
// N(0, 0.25^2), so that no gradient is tiny or structurally zero (biases
// start at 0 and LayerNorm weights at 1).
func replicaModel(t *testing.T, cfg model.Config, dtype tensor.Dtype) *model.Model {
	t.Helper()
	m, err := model.New(cfg, dtype, 5)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 99))
	for _, p := range m.Params {
		switch w := p.Value.Data().(type) {
		case []float64:
			for i := range w {
				w[i] += 0.25 * rng.NormFloat64()
			}
		case []float32:
			for i := range w {
				w[i] += float32(0.25 * rng.NormFloat64())
			}
		}
	}
	return m
}

// randomBatch is n random tokens and targets below vocab, every third
// position unscored.
func randomBatch(rng *rand.Rand, n, vocab int) (tokens, targets []int, mask []float64) {
	tokens, targets, mask = make([]int, n), make([]int, n), make([]float64, n)
	for i := range tokens {
		tokens[i], targets[i], mask[i] = rng.IntN(vocab), rng.IntN(vocab), 1
		if i%3 == 1 {
			mask[i] = 0
		}
	}
	return tokens, targets, mask
}

// runOnce readies vm (a gorgonia.VM or Replicas) and runs it once.
func runOnce(t *testing.T, vm interface {
	Reset()
	RunAll() error
}) {
	t.Helper()
	vm.Reset()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasEqualOneGraph: a batch split into replicaCount parts gives
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
			cfg := replicaConfig(c.mlp, c.path)
			m := replicaModel(t, cfg, c.dtype)
			whole, err := model.Build(m, model.BuildOptions{Batch: c.batch, SeqLen: tt, Train: true})
			if err != nil {
				t.Fatal(err)
			}
			vm := whole.NewLeanMachine()
			defer vm.Close()
			split, err := BuildReplicas(m, c.batch, tt)
			if err != nil {
				t.Fatal(err)
			}
			defer split.Close()
			if want := min(replicaCount, c.batch); len(split.parts) != want {
				t.Fatalf("%d parts, want %d", len(split.parts), want)
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
				if err := split.drawDropout(cfg.Dropout, rand.New(rand.NewPCG(seed, 1))); err != nil {
					t.Fatal(err)
				}
				runOnce(t, vm)
				runOnce(t, split)
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
					w, g := valuesOf(want[i]), valuesOf(got[i])
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
	cfg := replicaConfig(false, layers.Fused)
	m := replicaModel(t, cfg, tensor.Float64)
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
	if got := split.parts[1].Tokens.Value().Data().([]int)[20-12]; got != 0 {
		t.Errorf("part 1 was fed token %d before the check failed", got)
	}
	if err := split.Feed(tokens[:5], targets, mask); err == nil {
		t.Error("a short batch was accepted")
	}
	if _, err := split.LossValue(); err == nil {
		t.Error("a loss before any run")
	}
}
