package analysis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// Attribution is direct logit attribution (as TransformerLens defines it):
// the correct token's logit at the scored positions of n task examples,
// split into what each part of the residual stream adds through the LM head:
// the embeddings (token and position), each head's output W_O^h y_h, each
// MLP's output, and the biases (the attention output biases, the final
// norm's shift and the LM head's). With full blocks the final norm's scale
// is held fixed, as TransformerLens does: each part is centred (LayerNorm)
// and divided by the position's own σ or RMS, so the parts still add up
// exactly to the logit. With norms after the sublayers (sandwich or
// post-norm blocks) a head's part is what it writes through its layer's
// ln1_post, whose divisor is held fixed at the layer's whole attention
// output in the same way, so the heads' parts still add up to what the
// attention wrote; the post norms' biases count among the biases. With the
// parallel residual the MLP's part is its own output, as it is added to
// the stream. A final soft-cap (model.final_softcap) is not split: the
// logit is the one before it, which the cap only bends (it keeps every
// logit's order). Each figure is a mean over the scored positions.
type Attribution struct {
	Embeddings float64     `json:"embeddings"`
	Heads      [][]float64 `json:"heads"`          // [layer][head]
	MLPs       []float64   `json:"mlps,omitempty"` // [layer], with full blocks
	Biases     float64     `json:"biases"`
	Logit      float64     `json:"logit"` // the mean correct-token logit, the sum of the above
	Positions  int         `json:"positions"`
	// Readout says, in words, what the attribution does where the model's
	// readout is not linear (AttributionReadout); "" where it is.
	Readout string `json:"readout,omitempty"`
	// TopTokens are, for each head, the TopTokenCount tokens whose logits
	// its output raises most directly (through the final norm as above,
	// mean over the scored positions), largest first: [layer][head][k].
	TopTokens [][][]int `json:"top_tokens"`
}

// TopTokenCount is how many tokens Attribution.TopTokens names a head.
const TopTokenCount = 3

// DirectLogitAttribution computes Attribution on the examples of a cached
// run that kept the circuit activations (Circuit). Every part is read from
// the activation that writes it into the stream, as TransformerLens's
// decompose_resid and stack_head_results read theirs: the embeddings from
// resid_pre of block 0, each head from its output (attn.head_out, W_O
// applied here), each MLP from mlp_out; none is worked out by subtraction,
// so the parts adding up to the logit is a check, not a definition.
func DirectLogitAttribution(c *Cache) (*Attribution, error) {
	m, b := c.Model, c.Batch
	cfg := m.Config
	n, t, dh := b.Size, b.SeqLen, cfg.DHead()
	param := func(name string) []float64 {
		p := m.Param(name)
		if p == nil {
			return nil
		}
		x, _ := model.Float64s(p)
		return x
	}
	head, err := newReadout(m)
	if err != nil {
		return nil, errors.Wrap(err, "direct logit attribution")
	}
	posts, err := postNorms(m)
	if err != nil {
		return nil, errors.Wrap(err, "direct logit attribution")
	}
	s, err := readStreamParts(c)
	if err != nil {
		return nil, errors.Wrap(err, "direct logit attribution")
	}
	out := &Attribution{Heads: make([][]float64, cfg.Layers), Readout: AttributionReadout(cfg)}
	if cfg.MLP {
		out.MLPs = make([]float64, cfg.Layers)
	}
	wos := make([][]float64, cfg.Layers)           // each layer's W_O (D, H*d)
	biases := make([][]float64, cfg.Layers)        // each layer's output bias (D), or nil
	mlpPostBiases := make([][]float64, cfg.Layers) // each layer's ln2_post bias (D), or nil
	for l := range cfg.Layers {
		out.Heads[l] = make([]float64, cfg.Heads)
		wos[l] = param(fmt.Sprintf("blocks.%d.attn.out.weight", l))
		biases[l] = param(fmt.Sprintf("blocks.%d.attn.out.bias", l))
		if cfg.PostNorms() {
			mlpPostBiases[l] = param(fmt.Sprintf("blocks.%d.ln2_post.bias", l))
		}
	}
	hd := cfg.Heads * dh
	gw := make([]float64, hd) // g^T W_O
	// ys[l][h] is Σ y / divisor over the scored positions: the head's
	// direct output through the norm, summed, is W_O^h of it, centred and
	// scaled (the readout is linear at each position's divisor).
	ys := make([][]float64, cfg.Layers)
	for l := range ys {
		ys[l] = make([]float64, hd)
	}
	for row := 0; row < n*t; row++ {
		if b.Mask[row] == 0 {
			continue
		}
		bi, p := row/t, row%t
		out.Positions++
		// What a part x of the residual stream adds to the correct logit,
		// through the final norm with this position's divisor, is linear
		// in x: g . x.
		divisor := head.divisor(s.final.Block(row))
		g := head.gradient(b.Targets[row], divisor)
		out.Biases += head.shift(b.Targets[row])
		out.Embeddings += kernels.Dot(g, s.embeddings.Block(row))
		for l := 0; l < cfg.Layers; l++ {
			gl, postDiv := g, 1.0 // what the attention output is read with, and its post norm's divisor
			if post := posts[l]; post != nil {
				a := attentionOutput(s.heads[l], wos[l], biases[l], bi, p) // (D)
				postDiv = post.divisor(a)
				gl = post.fold(slices.Clone(g), postDiv)
				if post.normB != nil {
					out.Biases += kernels.Dot(g, post.normB)
				}
			}
			if biases[l] != nil {
				out.Biases += kernels.Dot(gl, biases[l])
			}
			clear(gw)
			for i, gi := range gl {
				kernels.Axpy(gi, wos[l][i*hd:(i+1)*hd], gw)
			}
			for h := 0; h < cfg.Heads; h++ {
				y := s.heads[l].Block(bi, h, p)                      // (d)
				out.Heads[l][h] += kernels.Dot(gw[h*dh:(h+1)*dh], y) // g . W_O^h y
				kernels.Axpy(1/(divisor*postDiv), y, ys[l][h*dh:(h+1)*dh])
			}
			if cfg.MLP { // what mlp_out adds, less ln2_post's bias, which counts among the biases
				mlp := kernels.Dot(g, s.mlps[l].Block(row))
				if b2 := mlpPostBiases[l]; b2 != nil {
					bias := kernels.Dot(g, b2)
					out.Biases += bias
					mlp -= bias
				}
				out.MLPs[l] += mlp
			}
		}
	}
	if out.Positions == 0 {
		return nil, errors.New("no scored position in the examples")
	}
	out.TopTokens = topTokens(head, posts, wos, ys, cfg.Heads, dh)
	k := float64(out.Positions)
	out.Embeddings, out.Biases = out.Embeddings/k, out.Biases/k
	out.Logit = out.Embeddings + out.Biases
	for l := range out.Heads {
		for h := range out.Heads[l] {
			out.Heads[l][h] /= k
			out.Logit += out.Heads[l][h]
		}
	}
	for l := range out.MLPs {
		out.MLPs[l] /= k
		out.Logit += out.MLPs[l]
	}
	return out, nil
}

// streamParts are the activations of a cached run that direct logit
// attribution reads: what writes into the residual stream, and the final
// stream, whose final-norm divisor it holds fixed.
type streamParts struct {
	embeddings Tensor   // resid_pre of block 0 (B*T, D)
	heads      []Tensor // [layer] attn.head_out (B, H, T, d)
	mlps       []Tensor // [layer] mlp_out (B*T, D), with full blocks
	final      Tensor   // resid_post of the last block (B*T, D)
}

// readStreamParts reads them from c, the first missing one an error.
func readStreamParts(c *Cache) (streamParts, error) {
	cfg := c.Model.Config
	var err error
	get := func(name string) Tensor {
		if err != nil {
			return Tensor{}
		}
		var t Tensor
		t, err = c.Get(name)
		return t
	}
	s := streamParts{embeddings: get(model.ResidPre(0)), final: get(model.ResidPost(cfg.Layers - 1))}
	for l := range cfg.Layers {
		s.heads = append(s.heads, get(model.HeadOut(l)))
		if cfg.MLP {
			s.mlps = append(s.mlps, get(model.MLPOut(l)))
		}
	}
	return s, err
}

// AttributionReadout says what direct logit attribution does where cfg's
// readout is not linear, for the views to print beside its numbers: with
// norms after the sublayers, that each head is read through its layer's
// ln1_post at a fixed divisor; with a final soft-cap, that the logit split
// is the one before it. "" for a model whose readout is linear at each
// position's final-norm divisor.
func AttributionReadout(cfg model.Config) string {
	var says []string
	if cfg.FinalSoftcap > 0 {
		says = append(says, fmt.Sprintf("the logit split is the one before the final soft-cap at %g (the cap keeps the logits' order)", cfg.FinalSoftcap))
	}
	if cfg.PostNorms() {
		says = append(says, "each head is read through its layer's ln1_post at the whole attention output's divisor")
	}
	return strings.Join(says, "; ")
}

// LensReadout says what the logit lens does where cfg's readout is not
// linear: with a final soft-cap, that it caps every depth's logits as the
// model caps its output; "" without one. Norms after the sublayers need no
// word: the lens reads the stream between blocks, which they do not touch.
func LensReadout(cfg model.Config) string {
	if cfg.FinalSoftcap > 0 {
		return fmt.Sprintf("every depth's logits are soft-capped at %g, as the model's output is", cfg.FinalSoftcap)
	}
	return ""
}

// topTokens is Attribution.TopTokens from ys (each layer's Σ y / divisor,
// (H*d), the divisors the final norm's and the layer's post norm's) and
// W_O: every head's summed direct output, through its layer's post norm
// (posts[l], or none) and the final norm, one row each, read out in one
// product.
func topTokens(head *readout, posts []*readout, wos, ys [][]float64, heads, dh int) [][][]int {
	d := head.d
	written := make([]float64, 0, len(ys)*heads*d)
	for l, y := range ys {
		for h := range heads {
			w := make([]float64, d) // W_O^h ys[l][h]
			for i := range d {
				w[i] = kernels.Dot(wos[l][i*heads*dh+h*dh:i*heads*dh+(h+1)*dh], y[h*dh:(h+1)*dh])
			}
			if posts[l] != nil {
				w = posts[l].scaled(w)
			}
			written = append(written, head.scaled(w)...)
		}
	}
	logits := head.times(written) // (L*H, V)
	out := make([][][]int, len(ys))
	for l := range out {
		for h := range heads {
			row := logits[(l*heads+h)*head.vocab : (l*heads+h+1)*head.vocab]
			out[l] = append(out[l], largest(row, TopTokenCount))
		}
	}
	return out
}

// largest are the indices of the k largest values of xs, largest first
// (the lower index first among equals).
func largest(xs []float64, k int) []int {
	var top []int
	for i, x := range xs {
		at := len(top)
		for at > 0 && x > xs[top[at-1]] {
			at--
		}
		if at < k {
			top = slices.Insert(top, at, i)
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	return top
}

// postNorms are each layer's norm after the attention (ln1_post) as a
// readout of its own, with sandwich or post-norm blocks; nil entries
// without.
func postNorms(m *model.Model) ([]*readout, error) {
	posts := make([]*readout, m.Config.Layers)
	if !m.Config.PostNorms() {
		return posts, nil
	}
	for l := range posts {
		post, err := newNorm(m, fmt.Sprintf("blocks.%d.ln1_post", l))
		if err != nil {
			return nil, err
		}
		posts[l] = post
	}
	return posts, nil
}

// attentionOutput is a layer's attention output at position p of example
// bi, before any norm after it: W_O of its heads' outputs (outs (B, H, T,
// d)) side by side, plus the output bias (nil: none). (D)
func attentionOutput(outs Tensor, wo, bias []float64, bi, p int) []float64 {
	var y []float64 // the heads' outputs at the position, side by side (H*d)
	for h := range outs.Shape[1] {
		y = append(y, outs.Block(bi, h, p)...)
	}
	hd := len(y)
	a := make([]float64, len(wo)/hd)
	for i := range a {
		a[i] = kernels.Dot(wo[i*hd:(i+1)*hd], y)
		if bias != nil {
			a[i] += bias[i]
		}
	}
	return a
}
