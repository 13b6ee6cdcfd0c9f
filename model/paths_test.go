package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
	"gorgonia.org/tensor"
)

// TestPathsAgree: the same weights and batch on the fused and the gorgonia
// path give the same logits, attention weights, loss and gradient of every
// parameter, within 1e-12 in float64 and 1e-5 in float32, each relative to
// the largest entry (at least 1), attention-only and with MLP blocks, with
// key padding and dropout masks, over two runs of each machine.
func TestPathsAgree(t *testing.T) {
	for _, c := range []struct {
		dtype                tensor.Dtype
		mlp, keyPad, dropout bool
	}{
		{tensor.Float64, false, false, false}, {tensor.Float64, false, true, true},
		{tensor.Float64, true, false, false}, {tensor.Float64, true, true, true},
		{tensor.Float32, false, true, true}, {tensor.Float32, true, true, true},
	} {
		t.Run(fmt.Sprintf("%v,mlp=%t,keypad=%t,dropout=%t", c.dtype, c.mlp, c.keyPad, c.dropout), func(t *testing.T) {
			const b, tt = 3, 6
			tol := 1e-12
			if c.dtype == tensor.Float32 {
				tol = 1e-5
			}
			type result struct {
				logits, loss     []float64
				attention, grads [][]float64
			}
			results := map[layers.Path][]result{}
			for _, path := range layers.Paths {
				cfg := testConfig(c.mlp, path)
				if !c.dropout {
					cfg.Dropout = 0
				}
				m := randomModel(t, cfg, c.dtype)
				g := mustBuild(t, m, BuildOptions{Batch: b, SeqLen: tt, Train: true, KeyPadding: c.keyPad})
				if c.dropout && len(g.DropoutMasks) != cfg.Layers {
					t.Fatalf("%d dropout masks, want %d", len(g.DropoutMasks), cfg.Layers)
				}
				vm := g.NewMachine()
				defer vm.Close()
				rng := rand.New(rand.NewPCG(11, 12)) // the same batches and masks on both paths
				for step := 0; step < 2; step++ {
					tokens, targets, mask := randomBatch(rng, b*tt, cfg.Vocab)
					if err := g.Feed(tokens, targets, mask); err != nil {
						t.Fatal(err)
					}
					if c.keyPad {
						fillMask(g.KeyMask.Value().(*tensor.Dense), rng, 0.25, 1)
					}
					for _, dm := range g.DropoutMasks {
						fillMask(dm.Value().(*tensor.Dense), rng, cfg.Dropout, 1/(1-cfg.Dropout))
					}
					run(t, vm)
					r := result{logits: floats(t, g.Logits), loss: []float64{lossOf(t, g)}}
					for _, a := range attentionNodes(g) {
						r.attention = append(r.attention, floats(t, a))
					}
					grads, err := g.Gradients()
					if err != nil {
						t.Fatal(err)
					}
					for _, gr := range grads {
						r.grads = append(r.grads, toFloat64s(gr))
					}
					results[path] = append(results[path], r)
				}
			}
			check := func(what string, got, want []float64) {
				t.Helper()
				scale := 1.0
				for _, v := range want {
					scale = math.Max(scale, math.Abs(v))
				}
				if e := graphtest.MaxAbsDiff(t, got, want); !(e <= tol*scale) {
					t.Errorf("%s: gorgonia path differs from fused by %.3g (largest entry %.3g)", what, e, scale)
				}
			}
			specs := testConfig(c.mlp, layers.Fused).ParamSpecs()
			for step, want := range results[layers.Fused] {
				got := results[layers.Gorgonia][step]
				check(fmt.Sprintf("step %d logits", step), got.logits, want.logits)
				check(fmt.Sprintf("step %d loss", step), got.loss, want.loss)
				for l := range want.attention {
					check(fmt.Sprintf("step %d attention[%d]", step, l), got.attention[l], want.attention[l])
				}
				for i := range want.grads {
					check(fmt.Sprintf("step %d gradient of %s", step, specs[i].Name), got.grads[i], want.grads[i])
				}
			}
		})
	}
}

// fillMask sets each entry of mask to 0 with probability p, else to keep.
func fillMask(mask *tensor.Dense, rng *rand.Rand, p, keep float64) {
	for i := 0; i < mask.Shape().TotalSize(); i++ {
		v := keep
		if rng.Float64() < p {
			v = 0
		}
		switch d := mask.Data().(type) {
		case []float64:
			d[i] = v
		case []float32:
			d[i] = float32(v)
		}
	}
}

// toFloat64s copies a float tensor's values as float64s (nil for another
// dtype).
func toFloat64s(d *tensor.Dense) []float64 {
	out, _ := Float64s(d)
	return out
}
