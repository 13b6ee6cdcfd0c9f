package layers

// The attention scores' scale and soft-cap (Gemma 2), and the soft-cap the
// model puts on its logits, on each path.

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// checkScores is CheckOptions' rule on the scores' scale and soft-cap:
// each 0 (the default) or positive and finite, and no soft-cap with ALiBi,
// whose bias no model orders against the cap.
func checkScores(o AttentionOptions, key func(string) string) error {
	switch {
	case !positiveOrZero(o.Scale):
		return errors.Errorf("%s = %v: must be 0 (1/sqrt(head size)) or positive and finite", key("attn_scale"), o.Scale)
	case !positiveOrZero(o.SoftCap):
		return errors.Errorf("%s = %v: must be 0 (none) or positive and finite", key("attn_softcap"), o.SoftCap)
	case o.SoftCap > 0 && o.ALiBi:
		return errors.Errorf("%s = %v with %s = alibi: a soft-cap before ALiBi's bias is no model's; use rope, learned, sinusoidal or none", key("attn_softcap"), o.SoftCap, key("position"))
	}
	return nil
}

// positiveOrZero reports whether v is 0 or positive and finite (NaN is not).
func positiveOrZero(v float64) bool { return v == 0 || v > 0 && !math.IsInf(v, 1) }

// scale is the scores' factor: Scale, or 1/sqrt(d) when it is 0.
func (a *MultiHeadSelfAttention) scale() float64 {
	if a.Scale > 0 {
		return a.Scale
	}
	return 1 / math.Sqrt(float64(a.dHead()))
}

// weights is the masked softmax of the scores q kᵀ (B, H, T, T) on either
// path: of scale·scores, or with a soft-cap of cap·tanh(scale·scores/cap),
// the cap taken before the mask hides any key (Gemma 2's order). When the
// Tap wants the scores as TransformerLens holds them (scaled, capped,
// biased, -Inf where hidden: ops.MaskScores), the softmax reads those.
func (a *MultiHeadSelfAttention) weights(p string, scores, keyMask *gorgonia.Node) *gorgonia.Node {
	scale := a.scale()
	if a.SoftCap > 0 {
		scores, scale = softCap(a.Path, p+".capped", scores, scale, a.SoftCap), 1 // (B, H, T, T)
	}
	if !wants(a.Tap, p+".scores") {
		return at(a.Tap, p+".weights", node(p+".weights")(ops.MaskedSoftmax(scores, keyMask, a.mask(), scale))) // (B, H, T, T)
	}
	mask := a.mask()
	masked := at(a.Tap, p+".scores", node(p+".scores_masked")(ops.MaskScores(scores, keyMask, mask, scale))) // (B, H, T, T)
	mask.Slopes = nil                                                                                        // in the masked scores already
	return at(a.Tap, p+".weights", node(p+".weights")(ops.MaskedSoftmax(masked, keyMask, mask, 1)))          // (B, H, T, T)
}

// decodeWeights is weights for a decoding step's scores (B, G, g, C+1),
// whose bias hides what the mask would.
func (a *MultiHeadSelfAttention) decodeWeights(p string, scores, bias *gorgonia.Node) *gorgonia.Node {
	if a.SoftCap == 0 {
		return node(p + ".weights")(ops.BiasedSoftmax(scores, bias, a.scale())) // (B, G, g, C+1)
	}
	capped := softCap(a.Path, p+".capped", scores, a.scale(), a.SoftCap) // (B, G, g, C+1)
	return node(p + ".weights")(ops.BiasedSoftmax(capped, bias, 1))      // (B, G, g, C+1)
}

// SoftCap adds cap·tanh(scale·x/cap) of x (any shape) on path p, its output
// named name: ops.SoftCap on the fused path; Mul, Tanh and Mul on the
// Gorgonia path (whose Tanh has its gradient, 1 - tanh²). scale and cap
// must be positive and finite. The model caps its logits with it (scale 1).
func SoftCap(p Path, name string, x *gorgonia.Node, scale, cap float64) (capped *gorgonia.Node, err error) {
	if !(scale > 0 && cap > 0) || math.IsInf(scale, 1) || math.IsInf(cap, 1) {
		return nil, errors.Errorf("soft-cap %s: scale %v and cap %v must be positive and finite", name, scale, cap)
	}
	defer raise.Catch(&err)
	return softCap(p, name, x, scale, cap), nil
}

// softCap is SoftCap inside a builder: an error raises.
func softCap(p Path, name string, x *gorgonia.Node, scale, cap float64) *gorgonia.Node {
	if p != Gorgonia {
		return node(name)(ops.SoftCap(x, scale, cap)) // same shape as x
	}
	g, dt := x.Graph(), x.Dtype()
	arg := node(name + ".tanh_arg")(gorgonia.Mul(x, scalar(g, dt, scale/cap))) // scale·x/cap
	th := node(name + ".tanh")(gorgonia.Tanh(arg))                             // tanh(scale·x/cap)
	return node(name)(gorgonia.Mul(th, scalar(g, dt, cap)))                    // cap·tanh(scale·x/cap)
}
