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
	n, t := b.Size, b.SeqLen
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
	out := &Attribution{Heads: make([][]float64, cfg.Layers), TopTokens: make([][][]int, cfg.Layers), Readout: AttributionReadout(cfg)}
	if cfg.MLP {
		out.MLPs = make([]float64, cfg.Layers)
	}
	// What a part x of the residual stream adds to the correct logit,
	// through the final norm with its position's divisor, is linear in x:
	// g . x, one g a scored position.
	var scored []scoredRow
	for row := 0; row < n*t; row++ {
		if b.Mask[row] == 0 {
			continue
		}
		divisor := head.divisor(s.final.Block(row))
		scored = append(scored, scoredRow{row: row, divisor: divisor, g: head.gradient(b.Targets[row], divisor)})
	}
	if len(scored) == 0 {
		return nil, errors.New("no scored position in the examples")
	}
	// The layers are read one at a time (an 8B model's W_O in float64 is
	// 128 MB a layer, 4.3 GB for them all); the biases' terms of each
	// position and layer are kept to be added in the order of positions
	// then layers.
	biasTerms := make([][3]float64, len(scored)*cfg.Layers) // [position*L + layer]
	for l := range cfg.Layers {
		if err := attributeLayer(m, l, t, s, head, posts[l], scored, out, biasTerms); err != nil {
			return nil, errors.Wrap(err, "direct logit attribution")
		}
	}
	for i, sr := range scored {
		out.Biases += head.shift(b.Targets[sr.row])
		out.Embeddings += kernels.Dot(sr.g, s.embeddings.Block(sr.row))
		for l := range cfg.Layers {
			for _, term := range biasTerms[i*cfg.Layers+l] {
				out.Biases += term
			}
		}
	}
	out.Positions = len(scored)
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
	return out, errors.Wrap(head.err, "direct logit attribution")
}

// scoredRow is a scored position of the batch (row of B*T), its final
// norm's divisor and the gradient g of its correct logit.
type scoredRow struct {
	row     int
	divisor float64
	g       []float64
}

// attributeLayer adds layer l's heads and MLP to out at every scored
// position, with its W_O read as float64 for this layer alone, sets its
// heads' top tokens, and sets the biases' terms of the layer at each
// position of the batch's rows of t positions (biasTerms[i*L+l]: ln1_post's bias, the attention output's, the
// MLP's ln2_post's; 0 for those the model has not).
func attributeLayer(m *model.Model, l, t int, s streamParts, head, post *readout, scored []scoredRow, out *Attribution, biasTerms [][3]float64) error {
	cfg := m.Config
	dh, hd := cfg.DHead(), cfg.Heads*cfg.DHead()
	wo, err := paramFloat64s(m, fmt.Sprintf("blocks.%d.attn.out.weight", l)) // (D, H*d)
	if err != nil {
		return err
	}
	bias, err := paramFloat64s(m, fmt.Sprintf("blocks.%d.attn.out.bias", l))
	if err != nil {
		return err
	}
	var mlpPostBias []float64
	if cfg.PostNorms() {
		if mlpPostBias, err = paramFloat64s(m, fmt.Sprintf("blocks.%d.ln2_post.bias", l)); err != nil {
			return err
		}
	}
	out.Heads[l] = make([]float64, cfg.Heads)
	gw := make([]float64, hd) // g^T W_O
	// ys is Σ y / divisor over the scored positions: the head's direct
	// output through the norm, summed, is W_O^h of it, centred and scaled
	// (the readout is linear at each position's divisor).
	ys := make([]float64, hd)
	for i, sr := range scored {
		bi, p := sr.row/t, sr.row%t
		terms := &biasTerms[i*cfg.Layers+l]
		gl, postDiv := sr.g, 1.0 // what the attention output is read with, and its post norm's divisor
		if post != nil {
			a := attentionOutput(s.heads[l], wo, bias, bi, p) // (D)
			postDiv = post.divisor(a)
			gl = post.fold(slices.Clone(sr.g), postDiv)
			if post.normB != nil {
				terms[0] = kernels.Dot(sr.g, post.normB)
			}
		}
		if bias != nil {
			terms[1] = kernels.Dot(gl, bias)
		}
		clear(gw)
		for i, gi := range gl {
			kernels.Axpy(gi, wo[i*hd:(i+1)*hd], gw)
		}
		for h := 0; h < cfg.Heads; h++ {
			y := s.heads[l].Block(bi, h, p)                      // (d)
			out.Heads[l][h] += kernels.Dot(gw[h*dh:(h+1)*dh], y) // g . W_O^h y
			kernels.Axpy(1/(sr.divisor*postDiv), y, ys[h*dh:(h+1)*dh])
		}
		if cfg.MLP { // what mlp_out adds, less ln2_post's bias, which counts among the biases
			mlp := kernels.Dot(sr.g, s.mlps[l].Block(sr.row))
			if mlpPostBias != nil {
				terms[2] = kernels.Dot(sr.g, mlpPostBias)
				mlp -= terms[2]
			}
			out.MLPs[l] += mlp
		}
	}
	out.TopTokens[l] = topTokens(head, post, wo, ys, cfg.Heads, dh)
	return nil
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

// topTokens is one layer's row of Attribution.TopTokens from ys (the
// layer's Σ y / divisor, (H*d), the divisors the final norm's and the
// layer's post norm's) and its W_O: every head's summed direct output,
// through the layer's post norm (post, or none) and the final norm, one
// row each, read out in one product.
func topTokens(head, post *readout, wo, ys []float64, heads, dh int) [][]int {
	d := head.d
	written := make([]float64, 0, heads*d)
	for h := range heads {
		w := make([]float64, d) // W_O^h ys[h]
		for i := range d {
			w[i] = kernels.Dot(wo[i*heads*dh+h*dh:i*heads*dh+(h+1)*dh], ys[h*dh:(h+1)*dh])
		}
		if post != nil {
			w = post.scaled(w)
		}
		written = append(written, head.scaled(w)...)
	}
	logits := head.times(written) // (H, V)
	out := make([][]int, heads)
	for h := range out {
		out[h] = largest(logits[h*head.vocab:(h+1)*head.vocab], TopTokenCount)
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
