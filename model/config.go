package model

import (
	"fmt"
	"strings"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/layers"
	"github.com/pkg/errors"
)

// Config fixes the model's architecture. Vocab and Context normally come from
// the task (see package data); the rest from the run config.
// Vocab and Context are derived from the task, never read from YAML.
type Config struct {
	Vocab   int `json:"vocab" yaml:"-"`         // V: number of token ids
	Context int `json:"context" yaml:"-"`       // T_max: longest sequence the position table covers
	DModel  int `json:"d_model" yaml:"d_model"` // D: residual stream width
	Heads   int `json:"heads" yaml:"heads"`     // H: attention heads per layer, D % H == 0
	Layers  int `json:"layers" yaml:"layers"`   // number of blocks
	// MLP selects full pre-norm blocks (norm, attention, norm, MLP; the
	// norm is Norm's) and a final norm; false gives attention-only blocks
	// x = x + attn(x).
	MLP     bool    `json:"mlp" yaml:"mlp"`
	DFF     int     `json:"d_ff" yaml:"d_ff"`                 // F: MLP hidden width (used when MLP)
	QKVBias bool    `json:"qkv_bias" yaml:"qkv_bias"`         // bias on the fused Q/K/V projection
	OutBias bool    `json:"out_bias" yaml:"out_bias"`         // bias on the attention output projection
	LMBias  bool    `json:"lm_head_bias" yaml:"lm_head_bias"` // bias on the LM head
	Dropout float64 `json:"dropout" yaml:"dropout"`           // attention-weight dropout probability in training
	// Attention picks the ops the graph is written with: "fused" (this
	// project's ops, the default; "" reads as fused) or "gorgonia"
	// (Gorgonia's own ops). Both compute the same function from the same
	// weights, so a checkpoint runs on either.
	Attention string `json:"attention,omitempty" yaml:"attention"`

	// The attention family. Every zero value is the original design
	// (learned positions, full causal multi-head attention), so configs and
	// checkpoints written before these keys existed read as they were.

	// Position says how the model knows where a token is: "learned" (the
	// pos_emb table; "" reads as learned), "sinusoidal" (Vaswani et al.'s
	// fixed table added to the embeddings), "rope" (rotary embeddings of q
	// and k in every layer), "alibi" (Press et al.'s linear bias on the
	// scores) or "none".
	Position string `json:"position,omitempty" yaml:"position,omitempty"`
	// RopeBase is the rotary base with position rope; 0 reads as 10000.
	RopeBase float64 `json:"rope_base,omitempty" yaml:"rope_base,omitempty"`
	// KVHeads is the number of key and value heads: 0 reads as Heads
	// (multi-head), 1 is multi-query, any other divisor of Heads is
	// grouped-query attention.
	KVHeads int `json:"kv_heads,omitempty" yaml:"kv_heads,omitempty"`
	// Window > 0 lets each query see only its last Window keys (itself
	// included); 0 is full causal attention.
	Window int `json:"window,omitempty" yaml:"window,omitempty"`
	// KVLatent r > 0 is multi-head latent attention (DeepSeek-V2): each
	// token is projected to an r-wide latent from which every head's k and
	// v are up-projected.
	KVLatent int `json:"kv_latent,omitempty" yaml:"kv_latent,omitempty"`

	// The parts of today's open models (see parts.go). Every zero value is
	// GPT-2's block, so configs and checkpoints written before these keys
	// existed read as they were.

	// Norm is the full blocks' normalisation (ln1, ln2, ln_f): "layernorm"
	// ("" reads as it) or "rmsnorm".
	Norm string `json:"norm,omitempty" yaml:"norm,omitempty"`
	// NormBias turns a LayerNorm's bias off when false (nanoGPT's
	// bias=False); unset is on.
	NormBias Flag `json:"norm_bias,omitempty" yaml:"norm_bias,omitempty"`
	// NormEps is the norms' epsilon; 0 reads as DefaultNormEps.
	NormEps float64 `json:"norm_eps,omitempty" yaml:"norm_eps,omitempty"`
	// Activation is the MLP's: "gelu_tanh" ("" reads as it), "gelu",
	// "swiglu" or "relu2" (the Activation constants).
	Activation string `json:"activation,omitempty" yaml:"activation,omitempty"`
	// MLPBias turns the MLP's biases off when false; unset is on.
	MLPBias Flag `json:"mlp_bias,omitempty" yaml:"mlp_bias,omitempty"`
	// TieEmbeddings makes the LM head the token embedding: logits = x
	// tok_embᵀ, one tensor in the checkpoint, its gradient from both uses.
	TieEmbeddings bool `json:"tie_embeddings,omitempty" yaml:"tie_embeddings,omitempty"`
	// QKNorm normalises each head's q and k with an RMSNorm over the head's
	// d channels, a learned weight per channel shared by the heads, before
	// rotary positions: Qwen 3's q_norm and k_norm.
	QKNorm bool `json:"qk_norm,omitempty" yaml:"qk_norm,omitempty"`

	// Where the norms sit and how the residual adds (see norms.go).

	// NormPlacement is where a full block's norms sit: "pre" ("" reads as
	// it; x + f(norm(x))), "sandwich" (x + post(f(pre(x))), Gemma 2 and 3:
	// ln1, ln1_post, ln2, ln2_post) or "post" (x + norm(f(x)), OLMo 2:
	// ln1_post and ln2_post only). ln_f stays.
	NormPlacement string `json:"norm_placement,omitempty" yaml:"norm_placement,omitempty"`
	// NormOffset makes every RMSNorm (the blocks', QK-norm's and ln_f)
	// scale by (1 + w), as Gemma's do; its weights start at 0.
	NormOffset bool `json:"norm_offset,omitempty" yaml:"norm_offset,omitempty"`
	// QKNormScope is what QK-norm normalises: "head" ("" reads as it;
	// each head's d channels) or "all" (OLMo 2: the whole q projection,
	// H·d, and the whole k projection, G·d), before rotary either way.
	QKNormScope string `json:"qk_norm_scope,omitempty" yaml:"qk_norm_scope,omitempty"`
	// ParallelResidual adds the attention and the MLP of the same input:
	// x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX's use_parallel_residual).
	ParallelResidual bool `json:"parallel_residual,omitempty" yaml:"parallel_residual,omitempty"`

	// Positions and shapes (see rope.go). Every zero value is the
	// behaviour before these keys existed.

	// HeadDim is each head's width d; 0 reads as DModel/Heads. The heads
	// then concatenate to H·d channels: qkv (H·d + 2·G·d, D), attn.out
	// (D, H·d).
	HeadDim int `json:"head_dim,omitempty" yaml:"head_dim,omitempty"`
	// RopeScaling rescales the rotary inverse frequencies: "" none,
	// "linear" (divided by RopeFactor) or "llama3" (with RopeFactor,
	// RopeLowFreqFactor, RopeHighFreqFactor, RopeOriginalContext), as
	// transformers' modeling_rope_utils computes them.
	RopeScaling         string  `json:"rope_scaling,omitempty" yaml:"rope_scaling,omitempty"`
	RopeFactor          float64 `json:"rope_factor,omitempty" yaml:"rope_factor,omitempty"`
	RopeLowFreqFactor   float64 `json:"rope_low_freq_factor,omitempty" yaml:"rope_low_freq_factor,omitempty"`
	RopeHighFreqFactor  float64 `json:"rope_high_freq_factor,omitempty" yaml:"rope_high_freq_factor,omitempty"`
	RopeOriginalContext int     `json:"rope_original_context,omitempty" yaml:"rope_original_context,omitempty"`
	// RotaryDimsKey is rotary_dims: 0 turns the whole head, else only the
	// first rotary_dims channels of each head turn (RotaryDims).
	RotaryDimsKey int `json:"rotary_dims,omitempty" yaml:"rotary_dims,omitempty"`
	// GlobalLayers, with Window > 0, are the layers that see every earlier
	// position; the others keep the window. Empty: every layer windowed.
	GlobalLayers LayerList `json:"global_layers,omitempty" yaml:"global_layers,omitempty"`
	// LocalRopeBase, with rope and GlobalLayers, is the windowed layers'
	// rotary base, without rope scaling; 0: every layer uses RopeBase.
	LocalRopeBase float64 `json:"local_rope_base,omitempty" yaml:"local_rope_base,omitempty"`
	// The scores, logits and embeddings of Gemma and GPT-Neo (see
	// scores.go); every zero value is today's model.

	// AttnScale > 0 is the factor on q·k before the softmax; 0 reads as
	// 1/sqrt(head size). GPT-Neo's is 1, Gemma's query_pre_attn_scalar^-0.5.
	AttnScale float64 `json:"attn_scale,omitempty" yaml:"attn_scale,omitempty"`
	// AttnSoftcap > 0 caps the scaled scores s at cap·tanh(s/cap) before
	// the mask (Gemma 2's 50).
	AttnSoftcap float64 `json:"attn_softcap,omitempty" yaml:"attn_softcap,omitempty"`
	// FinalSoftcap > 0 caps the logits z at cap·tanh(z/cap) (Gemma 2's 30).
	FinalSoftcap float64 `json:"final_softcap,omitempty" yaml:"final_softcap,omitempty"`
	// EmbedScale > 0 multiplies the token embeddings after the lookup,
	// before positions (Gemma's sqrt(d_model) in the weights' dtype); a
	// tied head reads the unscaled table.
	EmbedScale float64 `json:"embed_scale,omitempty" yaml:"embed_scale,omitempty"`

	// MappedWeights is how many of the weights a model opened with its
	// matrices kept in their files (Param.Stored) holds there: the memory
	// estimates count them in no float32 value (they are checked against
	// MemAvailable when the model opens, CheckResident). Set by
	// FromValues, cleared by WidenStored; never written or read.
	MappedWeights float64 `json:"-" yaml:"-"`
}

// The position kinds of Config.Position.
const (
	PositionLearned    = "learned"
	PositionSinusoidal = "sinusoidal"
	PositionRope       = "rope"
	PositionALiBi      = "alibi"
	PositionNone       = "none"
)

// Positions lists the position kinds, in the order messages name them.
var Positions = []string{PositionLearned, PositionSinusoidal, PositionRope, PositionALiBi, PositionNone}

// positionAliases are other libraries' words for Positions (lower case,
// without '-' or '_'), suggested when a config uses one (msg.DidYouMean).
var positionAliases = map[string]string{
	"rotary": PositionRope, "absolute": PositionLearned, "learnedabsolute": PositionLearned,
	"sinusoid": PositionSinusoidal, "sincos": PositionSinusoidal, "nope": PositionNone,
}

// DefaultRopeBase is the rotary base of RoFormer and Llama.
const DefaultRopeBase = 10000

// PositionKind is Position with "" read as learned.
func (c Config) PositionKind() string {
	if c.Position == "" {
		return PositionLearned
	}
	return c.Position
}

// KVHeadCount is the number of key and value heads (KVHeads, 0 read as
// Heads).
func (c Config) KVHeadCount() int {
	if c.KVHeads == 0 {
		return c.Heads
	}
	return c.KVHeads
}

// MaxLength is the longest sequence the model can run: Context with a
// learned position table, 0 (no limit) for every other position kind.
func (c Config) MaxLength() int {
	if c.PositionKind() == PositionLearned {
		return c.Context
	}
	return 0
}

// KVPerToken is the number of values the model keeps per token per layer
// for its keys and values (what a decoding cache stores): 2·H·d for
// multi-head attention, 2·G·d with G key/value heads, r for a latent.
func (c Config) KVPerToken() int {
	if c.KVLatent > 0 {
		return c.KVLatent
	}
	return 2 * c.KVHeadCount() * c.DHead()
}

// AttentionOptions are the layers' options of layer i for this config on
// path p (the window and rotary frequencies may differ by layer); with
// qk_norm, the builder of a graph sets QKNorm's weights.
func (c Config) AttentionOptions(p layers.Path, i int) layers.AttentionOptions {
	o := layers.AttentionOptions{Path: p, KVHeads: c.KVHeads, Window: c.LayerWindow(i), ALiBi: c.PositionKind() == PositionALiBi, HeadDim: c.HeadDim}
	if c.QKNorm {
		o.QKNorm = &layers.QKNorm{Eps: c.Eps(), All: c.QKScope() == QKScopeAll, Offset: c.NormScaleOffset()}
	}
	o.Scale, o.SoftCap = c.AttnScale, c.AttnSoftcap
	o.RotaryFreqs = c.RopeFrequencies(i)
	return o
}

// Path is the layers.Path that Attention names ("" is fused).
func (c Config) Path() (layers.Path, error) {
	p, err := layers.ParsePath(c.Attention)
	if err != nil {
		return "", errors.Errorf("model.attention = %q: want %s or %s%s", c.Attention, layers.Fused, layers.Gorgonia, msg.DidYouMean(c.Attention, []string{string(layers.Fused), string(layers.Gorgonia)}, nil))
	}
	return p, nil
}

// DHead is the width of one attention head: HeadDim, 0 read as
// DModel/Heads.
func (c Config) DHead() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	return c.DModel / c.Heads
}

// Validate reports the first impossible setting, naming the numbers.
func (c Config) Validate() error {
	positive := []struct {
		name  string
		value int
	}{{"vocab", c.Vocab}, {"context", c.Context}, {"d_model", c.DModel}, {"heads", c.Heads}, {"layers", c.Layers}}
	for _, p := range positive {
		if p.value <= 0 {
			return errors.Errorf("model.%s = %d: must be positive", p.name, p.value)
		}
	}
	if c.MLP && c.DFF <= 0 {
		return errors.Errorf("model.d_ff = %d: must be positive when model.mlp is true", c.DFF)
	}
	if _, err := c.Path(); err != nil {
		return err
	}
	if err := c.validateFamily(); err != nil {
		return err
	}
	if err := c.validateParts(); err != nil {
		return err
	}
	if err := c.validatePositions(); err != nil {
		return err
	}
	if err := c.validateScores(); err != nil {
		return err
	}
	if err := layers.CheckOptions(c.DModel, c.Heads, c.KVLatent, c.AttentionOptions(layers.Fused, 0), configKey); err != nil {
		return err
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) { // written so that NaN fails too
		return errors.Errorf("model.dropout = %v: must be in [0, 1)", c.Dropout)
	}
	return nil
}

// configKey names an attention setting by its config key.
func configKey(field string) string { return "model." + field }

// validateFamily checks the position keys; layers.CheckOptions checks the
// rest of the attention family.
func (c Config) validateFamily() error {
	kind := c.PositionKind()
	known := false
	for _, p := range Positions {
		known = known || kind == p
	}
	switch {
	case !known:
		return errors.Errorf("model.position = %q: want one of %s%s", c.Position, strings.Join(Positions, ", "), msg.DidYouMean(c.Position, Positions, positionAliases))
	case c.RopeBase != 0 && kind != PositionRope:
		return errors.Errorf("model.rope_base = %v is only used with model.position = rope (it is %s)", c.RopeBase, kind)
	case kind == PositionSinusoidal && c.DModel%2 != 0:
		return errors.Errorf("model.position = sinusoidal needs an even model.d_model, not %d", c.DModel)
	}
	return nil
}

// ParamSpec names one weight tensor and its shape (PyTorch layout).
type ParamSpec struct {
	Name  string
	Shape []int
	Init  InitKind
}

// InitKind says how New fills a tensor.
type InitKind int

const (
	InitNormal InitKind = iota // N(0, InitStd^2)
	InitZeros
	InitOnes
)

// InitStd is the standard deviation of every normally initialised weight
// (GPT-2 / nanoGPT's choice).
const InitStd = 0.02

// ParamSpecs lists every tensor of a model with this config, in a fixed order
// that New, Build and checkpoints all follow.
func (c Config) ParamSpecs() []ParamSpec {
	d := c.DModel
	specs := []ParamSpec{{"tok_emb.weight", []int{c.Vocab, d}, InitNormal}}
	if c.PositionKind() == PositionLearned {
		specs = append(specs, ParamSpec{"pos_emb.weight", []int{c.Context, d}, InitNormal})
	}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("blocks.%d.", i)
		if c.PreNorms() {
			specs = append(specs, c.normSpecs(p+"ln1")...)
		}
		specs = append(specs, c.projectionSpecs(p+"attn.")...)
		specs = append(specs, c.qkNormSpecs(p+"attn.")...)
		specs = append(specs, ParamSpec{p + "attn.out.weight", []int{d, c.Heads * c.DHead()}, InitNormal})
		if c.OutBias {
			specs = append(specs, ParamSpec{p + "attn.out.bias", []int{d}, InitZeros})
		}
		if c.PostNorms() {
			specs = append(specs, c.normSpecs(p+"ln1_post")...)
		}
		if c.PreNorms() {
			specs = append(specs, c.normSpecs(p+"ln2")...)
		}
		if c.MLP {
			specs = append(specs, c.mlpSpecs(p+"mlp.")...)
		}
		if c.PostNorms() {
			specs = append(specs, c.normSpecs(p+"ln2_post")...)
		}
	}
	if c.MLP {
		specs = append(specs, c.normSpecs("ln_f")...)
	}
	if !c.TieEmbeddings {
		specs = append(specs, ParamSpec{"lm_head.weight", []int{c.Vocab, d}, InitNormal})
	}
	if c.LMBias {
		specs = append(specs, ParamSpec{"lm_head.bias", []int{c.Vocab}, InitZeros})
	}
	return specs
}

// UnembeddingName is the tensor the LM head multiplies the stream by (V, D):
// lm_head.weight, or tok_emb.weight when the model ties them.
func (c Config) UnembeddingName() string {
	if c.TieEmbeddings {
		return "tok_emb.weight"
	}
	return "lm_head.weight"
}

// projectionSpecs are one attention layer's input projections: the fused
// [q | k | v] (H·d + 2·G·d, D), or with a latent q (D, D), kv_down (r, D) and
// kv_up (2D, r) with rows [k | v]. Biases go with QKVBias (none on
// kv_down).
func (c Config) projectionSpecs(p string) []ParamSpec {
	d := c.DModel
	linear := func(name string, out, in int) []ParamSpec {
		specs := []ParamSpec{{p + name + ".weight", []int{out, in}, InitNormal}}
		if c.QKVBias && name != "kv_down" {
			specs = append(specs, ParamSpec{p + name + ".bias", []int{out}, InitZeros})
		}
		return specs
	}
	if c.KVLatent > 0 {
		return append(append(linear("q", d, d), linear("kv_down", c.KVLatent, d)...), linear("kv_up", 2*d, c.KVLatent)...)
	}
	return linear("qkv", (c.Heads+2*c.KVHeadCount())*c.DHead(), d)
}

// Family describes the attention variant in words, for headers: "" for the
// original design (learned positions, full multi-head attention), else what
// differs: "rope positions (base 10000), 2 kv heads (grouped-query),
// window 4".
func (c Config) Family() string {
	var parts []string
	switch kind := c.PositionKind(); kind {
	case PositionLearned:
	case PositionRope:
		base := c.RopeBase
		if base == 0 {
			base = DefaultRopeBase
		}
		parts = append(parts, c.ropeWords(base)...)
	case PositionNone:
		parts = append(parts, "no positions")
	default:
		parts = append(parts, kind+" positions")
	}
	switch kv := c.KVHeadCount(); {
	case c.KVLatent > 0:
		parts = append(parts, fmt.Sprintf("latent attention (kv latent %d)", c.KVLatent))
	case kv == 1 && c.Heads > 1:
		parts = append(parts, "1 kv head (multi-query)")
	case kv != c.Heads:
		parts = append(parts, fmt.Sprintf("%d kv heads (grouped-query)", kv))
	}
	parts = append(parts, c.headDimWords()...)
	parts = append(parts, c.windowWords()...)
	parts = append(parts, c.attentionScoresWords()...)
	return strings.Join(parts, ", ")
}

// Card is the model in the views' words (inspect's "model:" line): its
// shape, Blocks, then Family when the attention is not the original's:
// "12 layers x 12 heads, d_model 768, pre-LN blocks with MLP, tied
// embeddings".
func (c Config) Card() string {
	card := fmt.Sprintf("%s x %s, d_model %d, %s", msg.Count(c.Layers, "layer"), msg.Count(c.Heads, "head"), c.DModel, c.Blocks())
	if family := c.Family(); family != "" {
		card += ", " + family
	}
	return card
}

// Blocks names the blocks' parts in a few words, for model cards:
// "attention-only blocks", "pre-LN blocks with MLP" or "pre-RMSNorm blocks
// with MLP", the other parts that are not GPT-2's in parentheses, then
// QK-norm and tied embeddings when set.
func (c Config) Blocks() string {
	parts := []string{"attention-only blocks"}
	if c.MLP {
		var own []string
		if c.NormKind() == NormLayer && !c.NormBias.On() {
			own = append(own, "LayerNorm without bias")
		}
		if c.NormEps != 0 {
			own = append(own, fmt.Sprintf("norm eps %g", c.NormEps))
		}
		if kind := c.ActivationKind(); kind != ActivationGELUTanh {
			own = append(own, activationNames[kind])
		}
		if !c.MLPBias.On() {
			own = append(own, "no MLP biases")
		}
		head, norm := c.blocksHead()
		parts[0], own = head, append(norm, own...)
		if len(own) > 0 {
			parts[0] += " (" + strings.Join(own, ", ") + ")"
		}
	}
	if c.ParallelResidual {
		parts = append(parts, "parallel residual")
	}
	if c.QKNorm && c.QKScope() == QKScopeAll {
		parts = append(parts, "QK-norm over the projection")
	} else if c.QKNorm {
		parts = append(parts, "QK-norm")
	}
	if c.TieEmbeddings {
		parts = append(parts, "tied embeddings")
	}
	parts = append(parts, c.outputScoresWords()...)
	return strings.Join(parts, ", ")
}

// activationNames are the activations as model cards name them.
var activationNames = map[string]string{
	ActivationGELUTanh: "GELU (tanh)", ActivationGELU: "exact GELU", ActivationSwiGLU: "SwiGLU", ActivationReLU2: "ReLU²",
	ActivationGeGLU: "GeGLU",
}
