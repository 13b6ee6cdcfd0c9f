package model

import (
	"fmt"
	"math"
	"slices"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/layers"
)

// decodeView is the inputs of a decoding step that say what a layer sees:
// the slots its window lets the new position read and the rotary angles
// of that position. Layers with the same window and rotary frequencies
// share one view; a model whose layers differ (global_layers,
// local_rope_base) has two.
type decodeView struct {
	window  int            // 0: every earlier slot
	freqs   []float64      // rotary inverse frequencies, nil without rope
	spanIDs []int          // the spans' values, written in place at each step
	spans   *gorgonia.Node // (2B) Int, the fused path's slots seen, see layers.DecodeInputs
	bias    *gorgonia.Node // (B, G, g, C+1), the Gorgonia path's and latent attention's, or nil
	cos     *gorgonia.Node // (B, d) with rotary positions, else nil
	sin     *gorgonia.Node // (B, d) with rotary positions, else nil
}

// viewOf is the view of a layer with this window and these rotary
// frequencies, made (with its graph inputs) the first time it is asked
// for. The first view's inputs keep the names of a model with one
// ("decode.spans"), the next ones are numbered ("decode.view1.spans").
func (d *Decoder) viewOf(window int, freqs []float64) *decodeView {
	for _, v := range d.views {
		if v.window == window && slices.Equal(v.freqs, freqs) {
			return v
		}
	}
	cfg, b, c, dt := d.Model.Config, d.Batch, d.Capacity, d.Model.Dtype
	kv, dh := cfg.KVHeadCount(), cfg.DHead()
	prefix := "decode."
	if len(d.views) > 0 {
		prefix = fmt.Sprintf("decode.view%d.", len(d.views))
	}
	v := &decodeView{window: window, freqs: freqs}
	if d.Path == layers.Gorgonia || cfg.KVLatent > 0 {
		v.bias = layers.NewParam(d.g, prefix+"bias", newDense(dt, []int{b, kv, cfg.Heads / kv, c + 1}, make([]float64, b*cfg.Heads*(c+1))))
	} else {
		v.spanIDs = make([]int, 2*b)
		v.spans = intInput(d.g, prefix+"spans", v.spanIDs)
	}
	if freqs != nil {
		v.cos = layers.NewParam(d.g, prefix+"rotary_cos", newDense(dt, []int{b, dh}, make([]float64, b*dh)))
		v.sin = layers.NewParam(d.g, prefix+"rotary_sin", newDense(dt, []int{b, dh}, make([]float64, b*dh)))
	}
	d.views = append(d.views, v)
	return v
}

// fillBias writes which cache slots the new position sees through view v:
// slots before it (within the window, when there is one) and itself, with
// ALiBi's bias in the Gorgonia path's bias.
func (d *Decoder) fillBias(v *decodeView) {
	cfg, c, i := d.Model.Config, d.Capacity, d.pos
	if v.spans != nil {
		first := 0
		if v.window > 0 {
			first = max(0, i-v.window+1)
		}
		for r := 0; r < len(v.spanIDs); r += 2 {
			v.spanIDs[r], v.spanIDs[r+1] = first, i
		}
		return
	}
	var slopes []float64
	if cfg.PositionKind() == PositionALiBi {
		slopes = layers.ALiBiSlopes(cfg.Heads)
	}
	row := make([]float64, cfg.Heads*(c+1)) // one batch row: (H, C+1)
	for h := 0; h < cfg.Heads; h++ {
		for t := 0; t <= c; t++ {
			j := t // the key's position: slot t, or the new position itself
			if t == c {
				j = i
			}
			b := math.Inf(-1)
			if t == c || t < i && (v.window == 0 || j > i-v.window) {
				b = 0
				if slopes != nil {
					b = -slopes[h] * float64(i-j)
				}
			}
			row[h*(c+1)+t] = b
		}
	}
	fill(v.bias, row)
}

// fillRotary writes view v's rotary angles of the new position into every
// row (layers.RotaryTable: each angle at channels i and i+R/2, cos 1 and
// sin 0 on the channels past R).
func (d *Decoder) fillRotary(v *decodeView) {
	if v.cos == nil {
		return
	}
	dh, half := d.Model.Config.DHead(), len(v.freqs)
	cos, sin := ops.RotaryAngles(1, d.pos, v.freqs)
	fill(v.cos, layers.RotaryTable(cos, half, dh, 1))
	fill(v.sin, layers.RotaryTable(sin, half, dh, 0))
}
