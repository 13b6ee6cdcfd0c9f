package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// normsBlockConfigs are full-block models whose norms sit elsewhere than
// GPT-2's: Gemma's sandwich norms with RMSNorm by (1 + w), OLMo 2's
// post-norms with QK-norm over the projections, post-norm LayerNorms (a
// bias after each sublayer) and GPT-NeoX's parallel residual.
func normsBlockConfigs(vocab, context int) map[string]model.Config {
	base := model.Config{Vocab: vocab, Context: context, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 32}
	gemma, olmo, post, neox := base, base, base, base
	gemma.Norm, gemma.NormPlacement, gemma.NormOffset, gemma.Activation, gemma.MLPBias = model.NormRMS, model.PlacementSandwich, true, model.ActivationSwiGLU, model.FlagOff
	olmo.Norm, olmo.NormPlacement, olmo.QKNorm, olmo.QKNormScope, olmo.Position = model.NormRMS, model.PlacementPost, true, model.QKScopeAll, model.PositionRope
	post.NormPlacement, post.OutBias = model.PlacementPost, true
	neox.ParallelResidual, neox.OutBias, neox.Position = true, true, model.PositionRope
	return map[string]model.Config{"gemma": gemma, "olmo2": olmo, "post layernorm": post, "neox": neox}
}

// normsModel is cfg with random float32 weights, its norms' weights moved
// off their start (with norm_offset they start at 0, a scale of 1) and
// non-zero biases, so that a readout ignoring a norm's weight, its (1 + w)
// or its bias shows.
func normsModel(t *testing.T, cfg model.Config) *model.Model {
	t.Helper()
	m, err := model.New(cfg, tensor.Float32, 9)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params {
		if len(p.Value.Shape()) == 1 {
			for i := range p.Value.Float32s() {
				p.Value.Float32s()[i] += 0.3 * float32(i%3-1)
			}
		}
	}
	return m
}

// TestReadoutThroughNorms: on each normsBlockConfigs model, the logit
// lens's last depth is the model's own mean target logit (1e-4), so the
// final norm is read with its (1 + w); direct logit attribution's parts add
// up to that logit; and with every MLP's output projection zeroed the MLPs
// add nothing (1e-6): the heads' parts, read through ln1_post at its
// divisor, and the biases carry all the attention wrote, where counting
// W_O^h y without the post norm would leave the difference to the MLPs.
func TestReadoutThroughNorms(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 5, Symbols: 7})
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range normsBlockConfigs(task.Vocab(), task.SeqLen()) {
		t.Run(name, func(t *testing.T) {
			m := normsModel(t, cfg)
			want, k := meanTargetLogit(t, m, task, 16, 2)
			lens, err := LogitLens(cached(t, m, task, 16, 2))
			if err != nil {
				t.Fatal(err)
			}
			if last := lens[len(lens)-1]; math.Abs(last.Correct-want) > 1e-4*(1+math.Abs(want)) {
				t.Errorf("the lens's last depth reads a target logit of %v, the model's is %v", last.Correct, want)
			}
			check := func(what string) *Attribution {
				a, err := DirectLogitAttribution(cached(t, m, task, 16, 2))
				if err != nil {
					t.Fatal(err)
				}
				want, k = meanTargetLogit(t, m, task, 16, 2)
				if k != a.Positions || math.Abs(a.Logit-want) > 1e-4*(1+math.Abs(want)) {
					t.Errorf("%s: the parts add to %v over %d positions, the graph's logit is %v over %d", what, a.Logit, a.Positions, want, k)
				}
				return a
			}
			check("random weights")
			for l := range cfg.Layers {
				for _, p := range m.Params {
					if strings.HasPrefix(p.Name, fmt.Sprintf("blocks.%d.mlp.", l)) && (strings.Contains(p.Name, ".proj.") || strings.Contains(p.Name, ".down.")) {
						clear(p.Value.Float32s())
					}
				}
			}
			for l, x := range check("MLPs zeroed").MLPs {
				if math.Abs(x) > 1e-6 {
					t.Errorf("layer %d's zeroed MLP adds %v", l, x)
				}
			}
		})
	}
}

// TestTopTokensThroughPostNorms: with norms after the sublayers, each
// head's TopTokens carry the largest sums over the scored positions of
// W_U ln_f(ln1_post(W_O^h y)), both norms at the position's divisors (ln_f
// at the final stream, ln1_post at the layer's attention output W_O y +
// b_O) and without their biases, written here as plain loops (1e-4
// relative, the product runs in float32).
func TestTopTokensThroughPostNorms(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 5, Symbols: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gemma", "olmo2", "post layernorm"} {
		t.Run(name, func(t *testing.T) {
			m := normsModel(t, normsBlockConfigs(task.Vocab(), task.SeqLen())[name])
			for _, p := range m.Params { // ln1_post weights of both signs, so a readout that skips them ranks other tokens
				if strings.HasSuffix(p.Name, "ln1_post.weight") {
					for i := range p.Value.Float32s() {
						p.Value.Float32s()[i] = float32(i%5) - 2.5
					}
				}
			}
			cfg, c := m.Config, cached(t, m, task, 16, 2)
			a, err := DirectLogitAttribution(c)
			if err != nil {
				t.Fatal(err)
			}
			d, dh, tt := cfg.DModel, cfg.DHead(), c.Batch.SeqLen
			param := func(name string) []float64 {
				x, _ := model.Float64s(m.Param(name)) // nil for a tensor the model lacks
				return x
			}
			offset := cfg.NormScaleOffset()
			// norm is w ⊙ (x - centre) / sqrt(mean((x - centre)²) + eps), without its bias,
			// at the divisor of at (centre: at's mean for a LayerNorm, else 0).
			norm := func(x, at, w []float64) []float64 {
				var mean, sq float64
				if cfg.NormKind() == model.NormLayer {
					for _, v := range at {
						mean += v / float64(d)
					}
				}
				for _, v := range at {
					sq += (v - mean) * (v - mean) / float64(d)
				}
				var xMean float64
				if cfg.NormKind() == model.NormLayer {
					for _, v := range x {
						xMean += v / float64(d)
					}
				}
				out := make([]float64, d)
				for i := range out {
					out[i] = (offset + w[i]) * (x[i] - xMean) / math.Sqrt(sq+cfg.Eps())
				}
				return out
			}
			final, err := c.Get(model.ResidPost(cfg.Layers - 1))
			if err != nil {
				t.Fatal(err)
			}
			wu := param(cfg.UnembeddingName())
			for l := range cfg.Layers {
				wo, bo := param(fmt.Sprintf("blocks.%d.attn.out.weight", l)), param(fmt.Sprintf("blocks.%d.attn.out.bias", l))
				post := param(fmt.Sprintf("blocks.%d.ln1_post.weight", l))
				ys, err := c.Get(model.HeadOut(l))
				if err != nil {
					t.Fatal(err)
				}
				for h := range cfg.Heads {
					sums := make([]float64, cfg.Vocab)
					for row, keep := range c.Batch.Mask {
						if keep == 0 {
							continue
						}
						bi, p := row/tt, row%tt
						head, whole := make([]float64, d), make([]float64, d) // W_O^h y, and W_O y + b_O
						for i := range d {
							for hh := range cfg.Heads {
								y := ys.Block(bi, hh, p)
								for j := range dh {
									v := wo[i*cfg.Heads*dh+hh*dh+j] * y[j]
									whole[i] += v
									if hh == h {
										head[i] += v
									}
								}
							}
							if bo != nil {
								whole[i] += bo[i]
							}
						}
						x := final.Block(row)
						read := norm(norm(head, whole, post), x, param("ln_f.weight"))
						for k := range sums {
							for i := range d {
								sums[k] += wu[k*d+i] * read[i]
							}
						}
					}
					want := slices.Clone(sums)
					slices.SortFunc(want, func(x, y float64) int { return cmp.Compare(y, x) })
					for i, id := range a.TopTokens[l][h] {
						if math.Abs(sums[id]-want[i]) > 1e-4*(1+math.Abs(want[i])) {
							t.Errorf("L%d H%d: top token %d is %d (sum %v), the %d-th largest sum is %v", l, h, i, id, sums[id], i, want[i])
						}
					}
				}
			}
		})
	}
}
