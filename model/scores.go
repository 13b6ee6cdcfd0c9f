package model

// The scores, logits and embeddings of Gemma and GPT-Neo: the attention
// scores' scale and soft-cap (attn_scale, attn_softcap, which go to the
// layers through AttentionOptions), the logits' soft-cap (final_softcap),
// the token embeddings' scale (embed_scale), and Gemma's gated GELU MLP
// (activation geglu).

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/raise"
	"github.com/attnscope/attnscope/layers"
)

// Names of the nodes these parts add: the scaled token embeddings and the
// soft-capped logits (the LM head's output is named lm_head before it).
const (
	ScaledEmbedName = "tok_emb.scaled"
	CappedLogitName = "lm_head.softcap"
)

// Gated reports whether the MLP multiplies an activated gate by a second
// projection (SwiGLU, GeGLU): gate, up and down in place of fc and proj.
func (c Config) Gated() bool {
	kind := c.ActivationKind()
	return kind == ActivationSwiGLU || kind == ActivationGeGLU
}

// validateScores checks final_softcap and embed_scale; attn_scale and
// attn_softcap are layers.CheckOptions'.
func (c Config) validateScores() error {
	for _, k := range []struct {
		key   string
		value float64
		zero  string
	}{{"final_softcap", c.FinalSoftcap, "none"}, {"embed_scale", c.EmbedScale, "unscaled"}} {
		if v := k.value; !(v == 0 || v > 0 && !math.IsInf(v, 1)) {
			return errors.Errorf("model.%s = %v: must be 0 (%s) or positive and finite", k.key, v, k.zero)
		}
	}
	return nil
}

// scaleEmbedding multiplies the token embeddings x (N, D) by embed_scale,
// when the model has one, with Gorgonia's Mul by a named scalar (the same
// node on both paths, as attention dropout is).
func (gr *Graph) scaleEmbedding(x *gorgonia.Node) *gorgonia.Node {
	s := gr.Model.Config.EmbedScale
	if s == 0 {
		return x
	}
	scale := gorgonia.NewScalar(x.Graph(), x.Dtype(), gorgonia.WithName(fmt.Sprintf("embed_scale(%v)", s)), gorgonia.WithValue(scalarOf(gr.Model, s)))
	return node(ScaledEmbedName)(gorgonia.Mul(x, scale)) // (N, D)
}

// capLogits soft-caps the logits (N, V) at final_softcap when the model has
// one: cap·tanh(z/cap) (layers.SoftCap on the graph's path).
func (gr *Graph) capLogits(logits *gorgonia.Node) *gorgonia.Node {
	c := gr.Model.Config.FinalSoftcap
	if c == 0 {
		return logits
	}
	return raise.Must(layers.SoftCap(gr.Path, CappedLogitName, logits, 1, c)) // (N, V)
}

// scalarOf is v in m's dtype, as a scalar node's value.
func scalarOf(m *Model, v float64) any {
	if m.Dtype.Size() == 4 {
		return float32(v)
	}
	return v
}

// attentionScoresWords are the model card's words for the scores' scale
// and soft-cap (Family's), outputScoresWords those for the embeddings'
// scale and the logits' soft-cap (Blocks').
func (c Config) attentionScoresWords() []string {
	var words []string
	switch {
	case c.AttnScale == 1:
		words = append(words, "unscaled attention")
	case c.AttnScale > 0 && !sameScale(c.AttnScale, 1/math.Sqrt(float64(c.DHead()))):
		words = append(words, "attention scale "+scaleWords(c.AttnScale))
	}
	if c.AttnSoftcap > 0 {
		words = append(words, fmt.Sprintf("attention soft-cap %g", c.AttnSoftcap))
	}
	return words
}

// scaleWords is a query scale as a card names it: "1/sqrt(200)" or
// "1/12" for a power -0.5 of a whole number (Gemma's
// query_pre_attn_scalar^-0.5), else its value ("0.4").
func scaleWords(scale float64) string {
	n := math.Round(1 / (scale * scale))
	root := math.Sqrt(n)
	switch {
	case n < 2 || !sameScale(scale, 1/root):
		return fmt.Sprintf("%.4g", scale)
	case root == math.Round(root):
		return fmt.Sprintf("1/%g", root)
	}
	return fmt.Sprintf("1/sqrt(%g)", n)
}

// sameScale reports whether two query scales agree to float32's precision
// (a scale read from a file may have been rounded through it).
func sameScale(a, b float64) bool { return math.Abs(a-b) <= 1e-6*b }

func (c Config) outputScoresWords() []string {
	var words []string
	if c.EmbedScale > 0 {
		words = append(words, fmt.Sprintf("embeddings scaled by %.4g", c.EmbedScale))
	}
	if c.FinalSoftcap > 0 {
		words = append(words, fmt.Sprintf("soft-capped logits at %g", c.FinalSoftcap))
	}
	return words
}

// scoresValues counts the values these parts add to a forward graph of b
// sequences of t positions on the fused path (see EstimateBytes): the
// capped scores (B, H, T, T) per layer, the scaled embeddings (B·T, D) and
// the capped logits (B·T, V).
func (c Config) scoresValues(b, t float64) float64 {
	var n float64
	if c.AttnSoftcap > 0 {
		n += float64(c.Layers) * b * float64(c.Heads) * t * t
	}
	if c.EmbedScale > 0 {
		n += b * t * float64(c.DModel)
	}
	if c.FinalSoftcap > 0 {
		n += b * t * float64(c.Vocab)
	}
	return n
}

// decodeScoresValues counts what these parts add to a decoding step (see
// DecodeBytes): per row, position and layer, the Gorgonia path's soft-cap
// nodes (tanh argument, tanh, capped: 3·H), or latent attention's one op
// on the fused path (H; ops.CacheAttention caps in place); per row, the
// capped logits (V, or the Gorgonia path's 3·V).
func (c Config) decodeScoresValues(path layers.Path) (perPosition, perRow float64) {
	switch {
	case c.AttnSoftcap == 0:
	case path == layers.Gorgonia:
		perPosition = 3 * float64(c.Heads)
	case c.KVLatent > 0:
		perPosition = float64(c.Heads) // the fused path's one op
	}
	if nodes := 1.0; c.FinalSoftcap > 0 {
		if path == layers.Gorgonia {
			nodes = 3
		}
		perRow = nodes * float64(c.Vocab)
	}
	return perPosition, perRow
}
