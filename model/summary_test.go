package model

import (
	"fmt"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// TestEveryNodeNamed: on both paths, in forward and training graphs with
// MLP blocks (of each kind, mlpParts, and a Llama-style block with QK-norm
// and a tied head), key padding and dropout, every op
// node carries a name that
// says what it is: no node keeps Gorgonia's own "op(%children)" name, the
// forward nodes are named after their layer and the nodes gorgonia.Grad
// adds after the gradient they are (or are a part of), the constant 1 it
// starts from "grad(loss)". The summary counts
// each op node once, as Gorgonia's or this project's. No op node of a
// training graph feeds nothing but the outputs and the gradients: Grad's
// gradients with respect to constants and masks are pruned, not run.
func TestEveryNodeNamed(t *testing.T) {
	eachPath(t, func(t *testing.T, path layers.Path) {
		configs := []Config{testConfig(false, path), testConfig(true, path)}
		for _, part := range mlpParts {
			cfg := testConfig(true, path)
			part(&cfg)
			configs = append(configs, cfg)
		}
		llama := testConfig(true, path) // every other part at once: RMSNorm, QK-norm, a tied head, rope, GQA
		mlpParts["swiglu"](&llama)
		llama.Norm, llama.QKNorm, llama.TieEmbeddings, llama.Position, llama.KVHeads = NormRMS, true, true, PositionRope, 1
		configs = append(configs, llama, gemma2(testConfig(true, path)))
		for _, norms := range normsVariants() { // sandwich and post norms, (1 + w), QK-norm over the projections, the parallel residual
			norms.Attention = string(path)
			configs = append(configs, norms)
		}
		for _, cfg := range configs {
			mlp := fmt.Sprintf("%t (%s, %s, bias %t, %s)", cfg.MLP, cfg.NormKind(), cfg.ActivationKind(), cfg.MLPBias.On(), cfg.Blocks())
			m, err := New(cfg, tensor.Float32, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, train := range []bool{false, true} {
				g := mustBuild(t, m, BuildOptions{Batch: 2, SeqLen: 4, Train: train, KeyPadding: true})
				s, err := g.Summary()
				if err != nil {
					t.Fatal(err)
				}
				grads, parts, seed := 0, 0, false
				for _, r := range s.Rows {
					seed = seed || r.Name == "grad(loss)"
					switch {
					case unnamedForm(r.Name):
						t.Errorf("mlp=%s train=%t: node %q (%s) has Gorgonia's default name", mlp, train, r.Name, r.Op)
					case strings.HasPrefix(r.Name, "grad("):
						grads++
						if strings.Contains(r.Name, ").part") {
							parts++
						}
					}
				}
				if train != (grads > 0) || (train && parts == 0) || train != seed {
					t.Errorf("mlp=%s train=%t: %d gradient nodes, %d of them parts, grad(loss) %t", mlp, train, grads, parts, seed)
				}
				outputs := map[*gorgonia.Node]bool{g.Loss: true, g.Logits: true}
				for _, n := range append(activationNodes(g), g.grads...) {
					outputs[n] = true
				}
				for _, n := range g.G.AllNodes() {
					if n.Op() != nil && g.G.To(n.ID()).Len() == 0 && !outputs[n] {
						t.Errorf("mlp=%s train=%t: node %q (%s) feeds nothing", mlp, train, n.Name(), n.Op())
					}
				}
				if s.OpNodes != len(s.Rows) || s.BuiltinOps+s.ProjectOps != s.OpNodes {
					t.Errorf("mlp=%s train=%t: totals %+v disagree with %d rows", mlp, train, s, len(s.Rows))
				}
			}
		}
	})
}

// unnamedForm is Gorgonia's name for an op node nobody named: the op, then
// its children's ids in brackets.
func unnamedForm(name string) bool {
	return strings.HasSuffix(name, ")") && strings.Contains(name, "(%")
}
