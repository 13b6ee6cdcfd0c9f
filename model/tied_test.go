package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// TestTiedHeadGradient: a model with tie_embeddings gives the logits and
// loss of an untied model whose lm_head.weight is a copy of its
// tok_emb.weight (every other tensor equal), and its tok_emb.weight
// gradient is the sum of the untied model's tok_emb and lm_head gradients:
// Gorgonia adds the gradients of a node that both the embedding (the fused
// gather or ByIndices) and the head's Linear read. Every other gradient is
// the untied model's, the head's nodes are named lm_head, and LMHeadWeight
// is the tensor the head reads. On both paths, with full blocks and a head
// bias, float64 within 1e-12 and float32 within 1e-5, each relative to the
// largest entry (at least 1).
func TestTiedHeadGradient(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		for _, c := range []struct {
			dtype tensor.Dtype
			tol   float64
		}{{tensor.Float64, 1e-12}, {tensor.Float32, 1e-5}} {
			t.Run(fmt.Sprint(c.dtype), func(t *testing.T) {
				tied := testConfig(true, path)
				tied.TieEmbeddings, tied.Dropout = true, 0
				mt := randomModel(t, tied, c.dtype)
				untied := tied
				untied.TieEmbeddings = false
				mu := randomModel(t, untied, c.dtype)
				for i, p := range mu.Params {
					from := p.Name
					if from == "lm_head.weight" {
						from = "tok_emb.weight"
					}
					mu.Params[i].Value = mt.Param(from).Clone().(*tensor.Dense)
				}
				if mt.LMHeadWeight() != mt.Param("tok_emb.weight") || mu.LMHeadWeight() != mu.Param("lm_head.weight") {
					t.Error("LMHeadWeight is not tok_emb.weight when tied and lm_head.weight when not")
				}
				rng := rand.New(rand.NewPCG(21, 22))
				tokens, targets, mask := randomBatch(rng, 3*5, tied.Vocab)
				want, got := runTrain(t, mu, tokens, targets, mask), runTrain(t, mt, tokens, targets, mask)
				graphtest.CheckRelative(t, "logits", got["logits"], want["logits"], c.tol)
				graphtest.CheckRelative(t, "loss", got["loss"], want["loss"], c.tol)
				sum := add(want["tok_emb.weight"], want["lm_head.weight"])
				graphtest.CheckRelative(t, "tok_emb.weight gradient against the untied embedding's and head's", got["tok_emb.weight"], sum, c.tol)
				for _, p := range mt.Params {
					if p.Name != "tok_emb.weight" {
						graphtest.CheckRelative(t, p.Name+" gradient", got[p.Name], want[p.Name], c.tol)
					}
				}
			})
		}
	})
}

// runTrain runs one batch of 3 rows of 5 positions through a Train graph
// of m, whose logits node must be named lm_head, tied or not, and returns copies of its logits, its loss and each parameter's
// gradient, keyed "logits", "loss" and the parameter's name.
func runTrain(t *testing.T, m *Model, tokens, targets []int, mask []float64) map[string][]float64 {
	t.Helper()
	g := mustBuild(t, m, BuildOptions{Batch: 3, SeqLen: 5, Train: true})
	if g.Logits.Name() != "lm_head" {
		t.Errorf("the logits node is %q, want lm_head", g.Logits.Name())
	}
	feedRun(t, g, tokens, targets, mask)
	out := map[string][]float64{"logits": floats(t, g.Logits), "loss": {lossOf(t, g)}}
	grads, err := g.Gradients()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Params {
		out[p.Name] = toFloat64s(grads[i])
	}
	return out
}
