package model

import (
	"encoding/json"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"go.yaml.in/yaml/v3"
)

// The norms of Config.Norm and the activations of Config.Activation.
const (
	NormLayer = "layernorm" // (x - mean) / sqrt(var + eps) * w [+ b]
	NormRMS   = "rmsnorm"   // x / sqrt(mean(x^2) + eps) * w

	ActivationGELUTanh = "gelu_tanh" // GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
	ActivationGELU     = "gelu"      // exact: 0.5 x (1 + erf(x / sqrt 2)), nanoGPT's nn.GELU
	ActivationSwiGLU   = "swiglu"    // down(silu(gate x) * up x), Llama's MLP
	ActivationReLU2    = "relu2"     // relu(x)^2, nanochat's
	ActivationGeGLU    = "geglu"     // down(gelu_tanh(gate x) * up x), Gemma's MLP
)

// Norms and Activations list the values, in the order messages name them.
var (
	Norms       = []string{NormLayer, NormRMS}
	Activations = []string{ActivationGELUTanh, ActivationGELU, ActivationSwiGLU, ActivationReLU2, ActivationGeGLU}
)

// normAliases and activationAliases are other libraries' words for Norms
// and Activations (Hugging Face's hidden_act among them; lower case,
// without '-' or '_'), suggested when a config uses one (msg.DidYouMean).
var (
	normAliases       = map[string]string{"rms": NormRMS, "ln": NormLayer}
	activationAliases = map[string]string{
		"gelunew": ActivationGELUTanh, "gelupytorchtanh": ActivationGELUTanh, "geluerf": ActivationGELU,
		"silu": ActivationSwiGLU, "swish": ActivationSwiGLU, "squaredrelu": ActivationReLU2, "relusquared": ActivationReLU2,
	}
)

// DefaultNormEps is the norms' epsilon when model.norm_eps is unset:
// PyTorch's nn.LayerNorm default.
const DefaultNormEps = 1e-5

// Flag is a config switch whose default is on: unset (the zero value, what
// every config and checkpoint written before the key existed holds) reads
// as on, and a config may set it true or false. It is written as a JSON or
// YAML boolean, and left out when unset.
type Flag int8

const (
	FlagUnset Flag = iota
	FlagOn
	FlagOff
)

// On is the switch's value, unset read as on.
func (f Flag) On() bool { return f != FlagOff }

// Set reports whether a config set the switch, either way.
func (f Flag) Set() bool { return f != FlagUnset }

func flagOf(b bool) Flag {
	if b {
		return FlagOn
	}
	return FlagOff
}

func (f Flag) MarshalJSON() ([]byte, error) { return json.Marshal(f.On()) }

func (f *Flag) UnmarshalJSON(raw []byte) error {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return err
	}
	*f = flagOf(b)
	return nil
}

func (f Flag) MarshalYAML() (any, error) { return f.On(), nil }

// DecodeScalar reads a YAML boolean, and nothing else (strictyaml.Scalar).
func (f *Flag) DecodeScalar(n *yaml.Node) error {
	var b bool
	if n.ShortTag() != "!!bool" {
		return errors.New("not a boolean")
	}
	if err := n.Decode(&b); err != nil {
		return err
	}
	*f = flagOf(b)
	return nil
}

// Want says what a config may give for a Flag.
func (f *Flag) Want() string { return "want true or false" }

// NormKind is Norm with "" read as layernorm.
func (c Config) NormKind() string {
	if c.Norm == "" {
		return NormLayer
	}
	return c.Norm
}

// ActivationKind is Activation with "" read as gelu_tanh.
func (c Config) ActivationKind() string {
	if c.Activation == "" {
		return ActivationGELUTanh
	}
	return c.Activation
}

// Eps is the norms' epsilon, NormEps with 0 read as DefaultNormEps.
func (c Config) Eps() float64 {
	if c.NormEps == 0 {
		return DefaultNormEps
	}
	return c.NormEps
}

// NormHasBias reports whether the blocks' norms have a bias: a LayerNorm
// unless norm_bias is false; an RMSNorm never.
func (c Config) NormHasBias() bool { return c.NormKind() == NormLayer && c.NormBias.On() }

// DefaultDFF is the MLP's hidden width when model.d_ff is unset: 4·D, or
// for SwiGLU and GeGLU (Gated), whose three matrices would otherwise hold half as many
// weights again, 2/3 of it rounded up as Llama rounds it, to a multiple of
// SwiGLUMultiple.
func (c Config) DefaultDFF() int {
	if !c.Gated() {
		return 4 * c.DModel
	}
	f := 2 * 4 * c.DModel / 3
	return SwiGLUMultiple * ((f + SwiGLUMultiple - 1) / SwiGLUMultiple)
}

// SwiGLUMultiple is what a SwiGLU's default hidden width is rounded up to
// (Llama's multiple_of is 256, for widths of thousands).
const SwiGLUMultiple = 32

// validateParts checks the block parts' keys and their combinations.
func (c Config) validateParts() error {
	full := "attention-only blocks have no norm or MLP; set model.mlp: true"
	switch {
	case !contains(Norms, c.NormKind()):
		return errors.Errorf("model.norm = %q: want one of %s%s", c.Norm, strings.Join(Norms, ", "), msg.DidYouMean(c.Norm, Norms, normAliases))
	case !contains(Activations, c.ActivationKind()):
		return errors.Errorf("model.activation = %q: want one of %s%s", c.Activation, strings.Join(Activations, ", "), msg.DidYouMean(c.Activation, Activations, activationAliases))
	case c.NormBias.Set() && c.NormKind() == NormRMS:
		return errors.Errorf("model.norm_bias = %t: only model.norm = layernorm has a bias to turn off; rmsnorm has none", c.NormBias.On())
	case c.NormEps != 0 && !(c.NormEps > 0 && c.NormEps < 1):
		return errors.Errorf("model.norm_eps = %v: must be in (0, 1)", c.NormEps)
	case !c.MLP && c.Norm != "":
		return errors.Errorf("model.norm = %q: %s", c.Norm, full)
	case !c.MLP && c.NormBias.Set():
		return errors.Errorf("model.norm_bias = %t: %s", c.NormBias.On(), full)
	case !c.MLP && c.NormEps != 0:
		return errors.Errorf("model.norm_eps = %v: %s", c.NormEps, full)
	case !c.MLP && c.Activation != "":
		return errors.Errorf("model.activation = %q: %s", c.Activation, full)
	case !c.MLP && c.MLPBias.Set():
		return errors.Errorf("model.mlp_bias = %t: %s", c.MLPBias.On(), full)
	}
	return c.validateNorms()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// normSpecs are a norm's parameters: its weight, and a LayerNorm's bias
// unless norm_bias is false.
func (c Config) normSpecs(name string) []ParamSpec {
	specs := []ParamSpec{{name + ".weight", []int{c.DModel}, c.normInit()}}
	if c.NormHasBias() {
		specs = append(specs, ParamSpec{name + ".bias", []int{c.DModel}, InitZeros})
	}
	return specs
}

// mlpSpecs are one block's MLP parameters: fc (F, D) and proj (D, F), or
// SwiGLU's and GeGLU's gate and up (F, D) and down (D, F), with biases
// unless mlp_bias is false.
func (c Config) mlpSpecs(p string) []ParamSpec {
	d, f := c.DModel, c.DFF
	linear := func(name string, out, in int) []ParamSpec {
		specs := []ParamSpec{{p + name + ".weight", []int{out, in}, InitNormal}}
		if c.MLPBias.On() {
			specs = append(specs, ParamSpec{p + name + ".bias", []int{out}, InitZeros})
		}
		return specs
	}
	if c.Gated() {
		return append(append(linear("gate", f, d), linear("up", f, d)...), linear("down", d, f)...)
	}
	return append(linear("fc", f, d), linear("proj", d, f)...)
}

// qkNormSpecs are one layer's QK-norm weights (d each, or H·d and G·d over
// the whole projections), or none.
func (c Config) qkNormSpecs(p string) []ParamSpec {
	if !c.QKNorm {
		return nil
	}
	q, k := c.qkNormWidths()
	return []ParamSpec{{p + "q_norm.weight", []int{q}, c.normInit()}, {p + "k_norm.weight", []int{k}, c.normInit()}}
}
