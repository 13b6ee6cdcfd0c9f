package analysis

import (
	"fmt"
	"math/rand/v2"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// Attribution is direct logit attribution (as TransformerLens defines it):
// the correct token's logit at the scored positions of n task examples,
// split into what each part of the residual stream adds through the LM head.
// For an attention-only model the split is exact: the embeddings (token and
// position), each head's output W_O^h y_h, and the biases (the attention
// output biases and the LM head's). Each figure is a mean over the scored
// positions.
type Attribution struct {
	Embeddings float64     `json:"embeddings"`
	Heads      [][]float64 `json:"heads"` // [layer][head]
	Biases     float64     `json:"biases"`
	Logit      float64     `json:"logit"` // the mean correct-token logit, the sum of the above
	Positions  int         `json:"positions"`
}

// DirectLogitAttribution computes Attribution on n examples of task drawn
// from seed. Models with MLP blocks are refused: their logit passes
// through ln_f and the MLPs, which this split does not model yet.
func DirectLogitAttribution(m *model.Model, task data.Task, n int, seed uint64) (*Attribution, error) {
	cfg := m.Config
	if cfg.MLP {
		return nil, errors.New("direct logit attribution is built for attention-only models (this one has MLP blocks and ln_f)")
	}
	t, d, dh := task.SeqLen(), cfg.DModel, cfg.DHead()
	b := data.NewBatch(n, t)
	if err := data.Fill(task, b, rand.New(rand.NewPCG(seed, SamplesStream))); err != nil {
		return nil, err
	}
	g, err := model.Build(m, model.BuildOptions{Batch: n, SeqLen: t, HeadMask: true})
	if err != nil {
		return nil, errors.Wrap(err, "building the attribution graph")
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return nil, err
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, errors.Wrap(err, "running the model")
	}
	param := func(name string) []float64 {
		p := m.Param(name)
		if p == nil {
			return nil
		}
		x, _ := model.Float64s(p)
		return x
	}
	tokEmb, posEmb, unemb, lmBias := param("tok_emb.weight"), param("pos_emb.weight"), param("lm_head.weight"), param("lm_head.bias")
	if cfg.PositionKind() == model.PositionSinusoidal {
		posEmb = model.Sinusoidal(t, d)
	}
	dot := func(c int, x []float64) float64 { // W_U[c] . x
		var s float64
		for i, xi := range x {
			s += unemb[c*d+i] * xi
		}
		return s
	}
	out := &Attribution{Heads: make([][]float64, cfg.Layers)}
	outs := make([][]float64, cfg.Layers)   // each layer's head outputs (B, H, T, d), flat
	wos := make([][]float64, cfg.Layers)    // each layer's W_O (D, H*d)
	biases := make([][]float64, cfg.Layers) // each layer's output bias (D), or nil
	for l := range outs {
		out.Heads[l] = make([]float64, cfg.Heads)
		wos[l] = param(fmt.Sprintf("blocks.%d.attn.out.weight", l))
		biases[l] = param(fmt.Sprintf("blocks.%d.attn.out.bias", l))
		y, err := g.HeadOutputsValue(l)
		if err != nil {
			return nil, err
		}
		if outs[l], err = model.Float64s(y); err != nil {
			return nil, err
		}
	}
	for bi := 0; bi < n; bi++ {
		for p := 0; p < t; p++ {
			row := bi*t + p
			if b.Mask[row] == 0 {
				continue
			}
			c := b.Targets[row]
			out.Positions++
			emb := append([]float64(nil), tokEmb[b.Tokens[row]*d:(b.Tokens[row]+1)*d]...)
			if posEmb != nil {
				for i := range emb {
					emb[i] += posEmb[p*d+i]
				}
			}
			out.Embeddings += dot(c, emb)
			if lmBias != nil {
				out.Biases += lmBias[c]
			}
			for l := 0; l < cfg.Layers; l++ {
				wo := wos[l]
				if biases[l] != nil {
					out.Biases += dot(c, biases[l])
				}
				for h := 0; h < cfg.Heads; h++ {
					y := outs[l][((bi*cfg.Heads+h)*t+p)*dh : ((bi*cfg.Heads+h)*t+p+1)*dh]
					written := make([]float64, d) // W_O^h y
					for i := 0; i < d; i++ {
						for j := 0; j < dh; j++ {
							written[i] += wo[i*d+h*dh+j] * y[j]
						}
					}
					out.Heads[l][h] += dot(c, written)
				}
			}
		}
	}
	if out.Positions == 0 {
		return nil, errors.New("no scored position in the examples")
	}
	k := float64(out.Positions)
	out.Embeddings, out.Biases = out.Embeddings/k, out.Biases/k
	out.Logit = out.Embeddings + out.Biases
	for l := range out.Heads {
		for h := range out.Heads[l] {
			out.Heads[l][h] /= k
			out.Logit += out.Heads[l][h]
		}
	}
	return out, nil
}
