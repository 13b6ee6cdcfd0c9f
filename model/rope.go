package model

// The position and shape keys of today's open models: head_dim apart from
// d_model/heads, rotary scaling (linear, llama3), partial rotary, and
// windows and rope bases that differ by layer (Gemma 2/3, GPT-Neo).

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/ops"
)

// The rotary scalings of Config.RopeScaling ("" is none).
const (
	RopeScalingLinear = "linear" // every inverse frequency divided by rope_factor
	RopeScalingLlama3 = "llama3" // Llama 3.1's: low frequencies divided, high kept, a smooth ramp between
)

// RopeScalings lists the rotary scalings, in the order messages name them.
var RopeScalings = []string{RopeScalingLinear, RopeScalingLlama3}

// LayerList is a set of layer indexes, written as a JSON or YAML list of
// ints ([1, 3, 5]). It is held as its canonical text ("1,3,5") so that a
// Config stays comparable with ==, as checkpoints and fine-tuning compare
// them; the zero value is the empty list.
type LayerList string

// NewLayerList is the list of the given indexes, sorted.
func NewLayerList(layers ...int) LayerList {
	sorted := append([]int(nil), layers...)
	sort.Ints(sorted)
	words := make([]string, len(sorted))
	for i, l := range sorted {
		words[i] = strconv.Itoa(l)
	}
	return LayerList(strings.Join(words, ","))
}

// Indexes are the list's layers, in increasing order.
func (l LayerList) Indexes() []int {
	if l == "" {
		return nil
	}
	words := strings.Split(string(l), ",")
	out := make([]int, len(words))
	for i, w := range words {
		out[i], _ = strconv.Atoi(w) // NewLayerList wrote it
	}
	return out
}

// Contains reports whether layer i is in the list.
func (l LayerList) Contains(i int) bool {
	for _, x := range l.Indexes() {
		if x == i {
			return true
		}
	}
	return false
}

func (l LayerList) MarshalJSON() ([]byte, error) {
	list := l.Indexes()
	if list == nil {
		list = []int{}
	}
	return json.Marshal(list)
}

func (l *LayerList) UnmarshalJSON(raw []byte) error {
	var list []int
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	*l = NewLayerList(list...)
	return nil
}

func (l LayerList) MarshalYAML() (any, error) { return l.Indexes(), nil }

// DecodeList reads a YAML list of ints (strictyaml.List).
func (l *LayerList) DecodeList(n *yaml.Node) error {
	var list []int
	if n.Kind != yaml.SequenceNode {
		return errors.New("not a list")
	}
	if err := n.Decode(&list); err != nil {
		return err
	}
	*l = NewLayerList(list...)
	return nil
}

// Want says what a config may give for a LayerList.
func (l *LayerList) Want() string { return "want a list of layer indexes such as [1, 3]" }

// RotaryDims is the number R of channels of each head that rotary
// positions turn: RotaryDimsKey, 0 read as the whole head.
func (c Config) RotaryDims() int {
	if c.RotaryDimsKey == 0 {
		return c.DHead()
	}
	return c.RotaryDimsKey
}

// LocalLayer reports whether layer i is windowed: the window applies to
// every layer but those of GlobalLayers.
func (c Config) LocalLayer(i int) bool { return c.Window > 0 && !c.GlobalLayers.Contains(i) }

// LayerWindow is layer i's window (0: full causal attention): Window,
// except on the layers of GlobalLayers.
func (c Config) LayerWindow(i int) int {
	if c.GlobalLayers.Contains(i) {
		return 0
	}
	return c.Window
}

// RopeFrequencies are layer i's rotary inverse frequencies, R/2 of them
// (nil without rope): base^(-2j/R) for pair j, then the rope scaling. A
// windowed layer of a config with local_rope_base uses that base and no
// scaling (Gemma 3's rope_local_base_freq).
func (c Config) RopeFrequencies(i int) []float64 {
	if c.PositionKind() != PositionRope {
		return nil
	}
	if c.LocalRopeBase > 0 && c.LocalLayer(i) {
		return ops.RotaryFrequencies(c.LocalRopeBase, c.RotaryDims())
	}
	base := c.RopeBase
	if base == 0 {
		base = DefaultRopeBase
	}
	freqs := ops.RotaryFrequencies(base, c.RotaryDims())
	switch c.RopeScaling {
	case RopeScalingLinear:
		for j := range freqs {
			freqs[j] /= c.RopeFactor
		}
	case RopeScalingLlama3:
		for j, f := range freqs {
			freqs[j] = c.llama3Frequency(f)
		}
	}
	return freqs
}

// llama3Frequency rescales one inverse frequency f as transformers'
// _compute_llama3_parameters does: wavelengths 2π/f longer than
// original/low_freq_factor are divided by the factor, those shorter than
// original/high_freq_factor kept, and those between mixed by
// s = (original/wavelength - low) / (high - low):
// (1-s)·f/factor + s·f.
func (c Config) llama3Frequency(f float64) float64 {
	original := float64(c.RopeOriginalContext)
	low, high := c.RopeLowFreqFactor, c.RopeHighFreqFactor
	wavelength := 2 * math.Pi / f
	switch {
	case wavelength < original/high:
		return f
	case wavelength > original/low:
		return f / c.RopeFactor
	}
	s := (original/wavelength - low) / (high - low)
	return (1-s)*f/c.RopeFactor + s*f
}

// validatePositions checks the keys of this file, each against what it
// needs.
func (c Config) validatePositions() error {
	rope := c.PositionKind() == PositionRope
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	llama3 := c.RopeScaling == RopeScalingLlama3
	switch {
	case c.RopeBase != 0 && !(c.RopeBase > 1 && finite(c.RopeBase)):
		return errors.Errorf("model.rope_base = %v: must be finite and > 1", c.RopeBase)
	case c.HeadDim < 0:
		return errors.Errorf("model.head_dim = %d: must be 0 (d_model/heads) or positive", c.HeadDim)
	case c.HeadDim > 0 && c.KVLatent > 0:
		return errors.Errorf("model.head_dim = %d with model.kv_latent = %d: latent attention's heads are d_model/heads wide; leave head_dim unset", c.HeadDim, c.KVLatent)
	case c.RopeScaling != "" && !contains(RopeScalings, c.RopeScaling):
		return errors.Errorf("model.rope_scaling = %s: want %s (yarn, dynamic and longrope are not built)%s", msg.Quote(c.RopeScaling), strings.Join(RopeScalings, " or "), msg.DidYouMean(c.RopeScaling, RopeScalings, nil))
	case c.RopeScaling != "" && !rope:
		return errors.Errorf("model.rope_scaling = %s is only used with model.position = rope (it is %s)", c.RopeScaling, c.PositionKind())
	case c.RopeScaling == "" && c.RopeFactor != 0:
		return errors.Errorf("model.rope_factor = %v is only used with model.rope_scaling linear or llama3", c.RopeFactor)
	case c.RopeScaling != "" && !(c.RopeFactor > 0 && finite(c.RopeFactor)):
		return errors.Errorf("model.rope_factor = %v: model.rope_scaling = %s needs a finite factor > 0", c.RopeFactor, c.RopeScaling)
	case !llama3 && (c.RopeLowFreqFactor != 0 || c.RopeHighFreqFactor != 0 || c.RopeOriginalContext != 0):
		return errors.Errorf("model.rope_low_freq_factor, rope_high_freq_factor and rope_original_context (%v, %v, %d) are only used with model.rope_scaling = llama3", c.RopeLowFreqFactor, c.RopeHighFreqFactor, c.RopeOriginalContext)
	case llama3 && !(c.RopeLowFreqFactor > 0 && c.RopeHighFreqFactor > c.RopeLowFreqFactor && finite(c.RopeHighFreqFactor)):
		return errors.Errorf("model.rope_low_freq_factor = %v, model.rope_high_freq_factor = %v: llama3 scaling needs 0 < low < high, both finite", c.RopeLowFreqFactor, c.RopeHighFreqFactor)
	case llama3 && c.RopeOriginalContext <= 0:
		return errors.Errorf("model.rope_original_context = %d: llama3 scaling needs the original context length (original_max_position_embeddings), > 0", c.RopeOriginalContext)
	}
	return c.validateLayerKeys(rope)
}

// validateLayerKeys checks rotary_dims, global_layers and local_rope_base.
func (c Config) validateLayerKeys(rope bool) error {
	switch {
	case c.RotaryDimsKey != 0 && !rope:
		return errors.Errorf("model.rotary_dims = %d is only used with model.position = rope (it is %s)", c.RotaryDimsKey, c.PositionKind())
	case c.RotaryDimsKey < 0 || c.RotaryDimsKey%2 != 0 || c.RotaryDimsKey > c.DHead():
		return errors.Errorf("model.rotary_dims = %d: want 0 (the whole head) or an even number up to the head size %d", c.RotaryDimsKey, c.DHead())
	case rope && c.RotaryDims()%2 != 0 && c.HeadDim == 0:
		return errors.Errorf("model.position = rope needs an even head size (channel i pairs with i+d/2): d_model %d / heads %d = %d", c.DModel, c.Heads, c.DHead())
	case rope && c.RotaryDims()%2 != 0:
		return errors.Errorf("model.position = rope needs an even head size (channel i pairs with i+d/2): model.head_dim = %d", c.HeadDim)
	case c.Window < 0: // checked here too: a global layer 0 would hide it from layers.CheckOptions
		return errors.Errorf("model.window = %d: must be 0 (full) or positive", c.Window)
	case c.GlobalLayers != "" && c.Window == 0:
		return errors.Errorf("model.global_layers = [%s] is only used with model.window > 0 (every layer sees every earlier position without one)", c.GlobalLayers)
	case c.LocalRopeBase != 0 && (!rope || c.GlobalLayers == ""):
		return errors.Errorf("model.local_rope_base = %v is only used with model.position = rope and model.global_layers set", c.LocalRopeBase)
	case c.LocalRopeBase != 0 && !(c.LocalRopeBase > 1 && !math.IsInf(c.LocalRopeBase, 0)):
		return errors.Errorf("model.local_rope_base = %v: must be finite and > 1", c.LocalRopeBase)
	}
	for _, l := range c.GlobalLayers.Indexes() {
		if l < 0 || l >= c.Layers {
			return errors.Errorf("model.global_layers: layer %d is not one of the %d layers (0 to %d)", l, c.Layers, c.Layers-1)
		}
	}
	return nil
}

// ropeWords are the rotary keys as model cards name them, base being the
// rotary base: "rope positions (base 500000)", "rope positions (base
// 1000000 global, 10000 local)" (local_rope_base), "llama3 rope scaling
// x8", "rotary on 16 of 64 channels".
func (c Config) ropeWords(base float64) []string {
	number := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	words := []string{fmt.Sprintf("rope positions (base %s)", number(base))}
	if c.LocalRopeBase != 0 {
		words[0] = fmt.Sprintf("rope positions (base %s global, %s local)", number(base), number(c.LocalRopeBase))
	}
	if c.RopeScaling != "" {
		scaling := fmt.Sprintf("%s rope scaling x%g", c.RopeScaling, c.RopeFactor)
		if c.LocalRopeBase != 0 {
			scaling += " on global layers" // the windowed layers turn unscaled
		}
		words = append(words, scaling)
	}
	if c.RotaryDimsKey != 0 && c.RotaryDimsKey != c.DHead() {
		words = append(words, fmt.Sprintf("rotary on %d of %d channels", c.RotaryDimsKey, c.DHead()))
	}
	return words
}

// headDimWords is "head_dim 256" when head_dim is not d_model/heads.
func (c Config) headDimWords() []string {
	if c.HeadDim > 0 && c.HeadDim*c.Heads != c.DModel {
		return []string{fmt.Sprintf("head_dim %d", c.HeadDim)}
	}
	return nil
}

// windowWords are "window 4", or with global_layers "local/global 5:1
// with window 512 (every 6th layer global from 5)": one clause, without the
// commas a terminal view wraps at.
func (c Config) windowWords() []string {
	switch {
	case c.Window == 0:
		return nil
	case c.GlobalLayers == "":
		return []string{fmt.Sprintf("window %d", c.Window)}
	}
	global := c.GlobalLayers.Indexes()
	return []string{fmt.Sprintf("local/global %s with window %d (%s)", c.localGlobalRatio(global), c.Window, globalLayerWords(global))}
}

// localGlobalRatio is the local layers to the global ones in lowest terms,
// or the pattern's when the global layers recur every p layers (Gemma 3's
// 5:1 even where its 26 layers hold 22 local and 4 global).
func (c Config) localGlobalRatio(global []int) string {
	if p, ok := stride(global); ok && len(global) > 2 && p > 1 {
		return fmt.Sprintf("%d:1", p-1)
	}
	return ratio(c.Layers-len(global), len(global))
}

// stride is the step between consecutive layers when there are two or more
// and they are evenly spaced.
func stride(layers []int) (int, bool) {
	if len(layers) < 2 {
		return 0, false
	}
	p := layers[1] - layers[0]
	for i := 2; i < len(layers); i++ {
		if layers[i]-layers[i-1] != p {
			return 0, false
		}
	}
	return p, true
}

// globalLayerWords names the global layers: "layer 5 global", "layers 0
// and 2 global", "layers 3-5 global", "every 6th layer global from 5" for
// three or more evenly spaced, else the list.
func globalLayerWords(layers []int) string {
	words := make([]string, len(layers))
	for i, l := range layers {
		words[i] = strconv.Itoa(l)
	}
	switch p, even := stride(layers); {
	case len(layers) == 1:
		return "layer " + words[0] + " global"
	case len(layers) == 2:
		return "layers " + words[0] + " and " + words[1] + " global"
	case even && p == 1:
		return fmt.Sprintf("layers %d-%d global", layers[0], layers[len(layers)-1])
	case even:
		return fmt.Sprintf("every %s layer global from %d", ordinal(p), layers[0])
	}
	return "layers " + strings.Join(words, ", ") + " global"
}

// ordinal is "2nd", "3rd", "6th", "11th", "21st".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// ratio is a:b in lowest terms.
func ratio(a, b int) string {
	g := gcd(a, b)
	if g == 0 {
		return fmt.Sprintf("%d:%d", a, b)
	}
	return fmt.Sprintf("%d:%d", a/g, b/g)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
