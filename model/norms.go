package model

import (
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
)

// Where a full block's norms sit (Config.NormPlacement) and what QK-norm
// normalises (Config.QKNormScope).
const (
	PlacementPre      = "pre"      // x + f(norm(x)): GPT-2, Llama
	PlacementSandwich = "sandwich" // x + post(f(pre(x))): Gemma 2 and 3
	PlacementPost     = "post"     // x + norm(f(x)): OLMo 2

	QKScopeHead = "head" // one d-wide RMSNorm per head, its weight shared by the heads: Qwen 3, Gemma 3
	QKScopeAll  = "all"  // one RMSNorm over the whole q projection (H·d), one over k (G·d): OLMo 2
)

// Placements and QKScopes list the values, in the order messages name them.
var (
	Placements = []string{PlacementPre, PlacementSandwich, PlacementPost}
	QKScopes   = []string{QKScopeHead, QKScopeAll}
)

// placementAliases are other words for Placements (lower case, without '-'
// or '_'), suggested when a config uses one (msg.DidYouMean).
var placementAliases = map[string]string{
	"prenorm": PlacementPre, "preln": PlacementPre, "postnorm": PlacementPost, "postln": PlacementPost,
	"both": PlacementSandwich, "prepost": PlacementSandwich, "gemma": PlacementSandwich, "olmo": PlacementPost,
}

// PlacementKind is NormPlacement with "" read as pre.
func (c Config) PlacementKind() string {
	if c.NormPlacement == "" {
		return PlacementPre
	}
	return c.NormPlacement
}

// QKScope is QKNormScope with "" read as head.
func (c Config) QKScope() string {
	if c.QKNormScope == "" {
		return QKScopeHead
	}
	return c.QKNormScope
}

// PreNorms reports whether a full block normalises a sublayer's input (ln1,
// ln2), PostNorms whether it normalises its output (ln1_post, ln2_post).
func (c Config) PreNorms() bool  { return c.MLP && c.PlacementKind() != PlacementPost }
func (c Config) PostNorms() bool { return c.MLP && c.PlacementKind() != PlacementPre }

// validateNorms checks the keys of where the norms sit, what they scale by
// and how the residual adds.
func (c Config) validateNorms() error {
	full := "attention-only blocks have no norm or MLP; set model.mlp: true"
	switch {
	case !contains(Placements, c.PlacementKind()):
		return errors.Errorf("model.norm_placement = %s: want one of %s%s", msg.Quote(c.NormPlacement), strings.Join(Placements, ", "), msg.DidYouMean(c.NormPlacement, Placements, placementAliases))
	case !c.MLP && c.NormPlacement != "":
		return errors.Errorf("model.norm_placement = %s: %s", msg.Quote(c.NormPlacement), full)
	case c.NormOffset && c.NormKind() != NormRMS:
		return errors.Errorf("model.norm_offset = true: only an RMSNorm scales by (1 + w); set model.norm: rmsnorm (it is %s)", c.NormKind())
	case !contains(QKScopes, c.QKScope()):
		return errors.Errorf("model.qk_norm_scope = %s: want one of %s%s", msg.Quote(c.QKNormScope), strings.Join(QKScopes, ", "), msg.DidYouMean(c.QKNormScope, QKScopes, nil))
	case c.QKNormScope != "" && !c.QKNorm:
		return errors.Errorf("model.qk_norm_scope = %s: only used with model.qk_norm: true", msg.Quote(c.QKNormScope))
	case c.ParallelResidual && !c.MLP:
		return errors.Errorf("model.parallel_residual = true: %s", full)
	case c.ParallelResidual && c.PlacementKind() != PlacementPre:
		return errors.Errorf("model.parallel_residual = true with model.norm_placement = %s: the parallel residual is built for pre-norm blocks only", c.PlacementKind())
	}
	return nil
}

// NormScaleOffset is what every RMSNorm of the model adds to its weight: 1
// with norm_offset (Gemma's x / rms · (1 + w)), else 0.
func (c Config) NormScaleOffset() float64 {
	if c.NormOffset {
		return 1
	}
	return 0
}

// normInit is how a norm's weight starts: ones, or zeros when the norm
// scales by (1 + w).
func (c Config) normInit() InitKind {
	if c.NormOffset {
		return InitZeros
	}
	return InitOnes
}

// qkNormWidths are the widths of a layer's q_norm and k_norm weights: d
// each per head, or the whole projections H·d and G·d.
func (c Config) qkNormWidths() (q, k int) {
	d := c.DHead()
	if c.QKScope() == QKScopeAll {
		return c.Heads * d, c.KVHeadCount() * d
	}
	return d, d
}

// normsTensors is how many (B·T, D) tensors more than a pre-norm block's a
// full block holds, as EstimateBytes counts them: 4 for sandwich norms'
// two more norms (each an output and its statistics' share), 1 for the
// parallel residual's sum of the sublayers; post-norms hold as many as
// pre-norms.
func (c Config) normsTensors() float64 {
	switch {
	case c.PlacementKind() == PlacementSandwich:
		return 4
	case c.ParallelResidual:
		return 1
	}
	return 0
}

// normWords names the blocks' norms for a model card where the placement
// does not already ("pre-RMSNorm blocks"): "LayerNorm", "RMSNorm", or
// "RMSNorm (1 + w)".
func (c Config) normWords() string {
	switch {
	case c.NormOffset:
		return "RMSNorm (1 + w)"
	case c.NormKind() == NormRMS:
		return "RMSNorm"
	}
	return "LayerNorm"
}

// blocksHead is the model card's first words for full blocks:
// "pre-LN blocks with MLP", "pre-RMSNorm blocks with MLP", "post-norm
// blocks with MLP" or "blocks with MLP and sandwich norms"; own says the
// norm in the last two, and with norm_offset in the first.
func (c Config) blocksHead() (head string, own []string) {
	switch c.PlacementKind() {
	case PlacementPost:
		return "post-norm blocks with MLP", []string{c.normWords()}
	case PlacementSandwich:
		return "blocks with MLP and sandwich norms", []string{c.normWords()}
	}
	if c.NormOffset {
		own = []string{c.normWords()}
	}
	if c.NormKind() == NormRMS {
		return "pre-RMSNorm blocks with MLP", own
	}
	return "pre-LN blocks with MLP", own
}
