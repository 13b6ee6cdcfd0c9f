package model

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
	"gorgonia.org/tensor"
)

// TestPathsAgree: the same weights and batch on the fused and the gorgonia
// path give the same logits, attention weights, loss and gradient of every
// parameter, within 1e-12 in float64 and 1e-5 in float32, each relative to
// the largest entry (at least 1), attention-only and with MLP blocks (with
// GPT-2's LayerNorm or one of normConfigs' norms), with key padding and
// dropout masks, each MLP kind (mlpParts; in float32 without the masks,
// through which relu^2's gain takes the float32 Gorgonia path's rounding
// to 8e-6 from float64's, the fused path's 1.6e-6), and a Llama-style
// block (RMSNorm, SwiGLU, QK-norm, tied embeddings), over two runs of each
// machine.
func TestPathsAgree(t *testing.T) {
	type pathsCase struct {
		dtype                tensor.Dtype
		mlp, keyPad, dropout bool
		norm                 string // a normConfigs entry, or "" for GPT-2's LayerNorm
		part                 string // a key of mlpParts, or "" for GPT-2's MLP
		qkNormTied           bool   // QK-norm and a tied LM head
	}
	cases := []pathsCase{
		{tensor.Float64, false, false, false, "", "", false}, {tensor.Float64, false, true, true, "", "", false},
		{tensor.Float64, true, false, false, "", "", false}, {tensor.Float64, true, true, true, "", "", false},
		{tensor.Float32, false, true, true, "", "", false}, {tensor.Float32, true, true, true, "", "", false},
		{tensor.Float64, true, true, true, "rmsnorm", "", false}, {tensor.Float32, true, true, true, "rmsnorm", "", false},
		{tensor.Float64, true, true, true, "layernorm without bias", "", false}, {tensor.Float32, true, true, true, "layernorm without bias", "", false},
		{tensor.Float64, true, true, true, "rmsnorm", "swiglu", true}, {tensor.Float32, true, true, true, "rmsnorm", "swiglu", true},
	}
	for _, part := range slices.Sorted(maps.Keys(mlpParts)) {
		cases = append(cases, pathsCase{tensor.Float64, true, true, true, "", part, false}, pathsCase{tensor.Float32, true, false, false, "", part, false})
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v,mlp=%t,keypad=%t,dropout=%t,%s,%s,qknorm+tied=%t", c.dtype, c.mlp, c.keyPad, c.dropout, c.norm, c.part, c.qkNormTied), func(t *testing.T) {
			const b, tt = 3, 6
			tol := 1e-12
			if c.dtype == tensor.Float32 {
				tol = 1e-5
			}
			type result struct {
				logits, loss     []float64
				attention, grads [][]float64
			}
			config := func(path layers.Path) Config {
				cfg := testConfig(c.mlp, path)
				if !c.dropout {
					cfg.Dropout = 0
				}
				if norm := normConfigs[c.norm]; norm != nil {
					norm(&cfg)
				}
				if c.part != "" {
					mlpParts[c.part](&cfg)
				}
				cfg.QKNorm, cfg.TieEmbeddings = c.qkNormTied, c.qkNormTied
				return cfg
			}
			results := map[layers.Path][]result{}
			for _, path := range layers.Paths {
				cfg := config(path)
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
			specs := config(layers.Fused).ParamSpecs()
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
