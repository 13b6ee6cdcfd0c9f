package model

import (
	"fmt"

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
	// MLP selects full pre-LN blocks (LayerNorm, attention, LayerNorm, MLP) and a
	// final LayerNorm; false gives attention-only blocks x = x + attn(x).
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
}

// Path is the layers.Path that Attention names ("" is fused).
func (c Config) Path() (layers.Path, error) {
	p, err := layers.ParsePath(c.Attention)
	if err != nil {
		return "", errors.Errorf("model.attention = %q: want %s or %s", c.Attention, layers.Fused, layers.Gorgonia)
	}
	return p, nil
}

// DHead is the width of one attention head.
func (c Config) DHead() int { return c.DModel / c.Heads }

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
	if c.DModel%c.Heads != 0 {
		return errors.Errorf("model.d_model = %d is not divisible by model.heads = %d", c.DModel, c.Heads)
	}
	if c.MLP && c.DFF <= 0 {
		return errors.Errorf("model.d_ff = %d: must be positive when model.mlp is true", c.DFF)
	}
	if _, err := c.Path(); err != nil {
		return err
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) { // written so that NaN fails too
		return errors.Errorf("model.dropout = %v: must be in [0, 1)", c.Dropout)
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
	d, f := c.DModel, c.DFF
	specs := []ParamSpec{
		{"tok_emb.weight", []int{c.Vocab, d}, InitNormal},
		{"pos_emb.weight", []int{c.Context, d}, InitNormal},
	}
	norm := func(name string) []ParamSpec {
		return []ParamSpec{{name + ".weight", []int{d}, InitOnes}, {name + ".bias", []int{d}, InitZeros}}
	}
	for i := 0; i < c.Layers; i++ {
		p := fmt.Sprintf("blocks.%d.", i)
		if c.MLP {
			specs = append(specs, norm(p+"ln1")...)
		}
		specs = append(specs, ParamSpec{p + "attn.qkv.weight", []int{3 * d, d}, InitNormal})
		if c.QKVBias {
			specs = append(specs, ParamSpec{p + "attn.qkv.bias", []int{3 * d}, InitZeros})
		}
		specs = append(specs, ParamSpec{p + "attn.out.weight", []int{d, d}, InitNormal})
		if c.OutBias {
			specs = append(specs, ParamSpec{p + "attn.out.bias", []int{d}, InitZeros})
		}
		if c.MLP {
			specs = append(specs, norm(p+"ln2")...)
			specs = append(specs,
				ParamSpec{p + "mlp.fc.weight", []int{f, d}, InitNormal},
				ParamSpec{p + "mlp.fc.bias", []int{f}, InitZeros},
				ParamSpec{p + "mlp.proj.weight", []int{d, f}, InitNormal},
				ParamSpec{p + "mlp.proj.bias", []int{d}, InitZeros},
			)
		}
	}
	if c.MLP {
		specs = append(specs, norm("ln_f")...)
	}
	specs = append(specs, ParamSpec{"lm_head.weight", []int{c.Vocab, d}, InitNormal})
	if c.LMBias {
		specs = append(specs, ParamSpec{"lm_head.bias", []int{c.Vocab}, InitZeros})
	}
	return specs
}
