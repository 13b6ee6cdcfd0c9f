package model

import (
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// Head ablation on a graph built with BuildOptions.HeadMask: every head's
// output y (B, H, T, d) becomes y*mask + fill before the head merge, so one
// graph runs the intact model (ResetHeads) and the model without any chosen
// head (AblateHead) with nothing recomputed outside the graph.

// ResetHeads sets every layer's head mask to ones and fill to zeros: the
// intact model.
func (gr *Graph) ResetHeads() error {
	if gr.HeadMasks == nil {
		return errors.New("reset heads: the graph was built without HeadMask")
	}
	for i := range gr.HeadMasks {
		setAll(gr.HeadMasks[i].Value().(*tensor.Dense), 1)
		setAll(gr.HeadFills[i].Value().(*tensor.Dense), 0)
	}
	return nil
}

// AblateHead removes head h of layer l: its mask becomes 0 and its fill
// fill, the (T*d) output that replaces it in every row of the batch, row-major
// (t, channel); nil fills zeros (zero ablation). Other heads keep their
// current mask and fill.
func (gr *Graph) AblateHead(l, h int, fill []float64) error {
	cfg := gr.Model.Config
	if gr.HeadMasks == nil {
		return errors.New("ablate head: the graph was built without HeadMask")
	}
	if l < 0 || l >= cfg.Layers || h < 0 || h >= cfg.Heads {
		return errors.Errorf("ablate head: layer %d head %d outside the model's %d layers of %d heads", l, h, cfg.Layers, cfg.Heads)
	}
	t, d := gr.Opts.SeqLen, cfg.DModel/cfg.Heads
	if fill != nil && len(fill) != t*d {
		return errors.Errorf("ablate head: fill of %d values, want T*d = %d*%d = %d", len(fill), t, d, t*d)
	}
	mask := gr.HeadMasks[l].Value().(*tensor.Dense)
	filled := gr.HeadFills[l].Value().(*tensor.Dense)
	for b := range gr.Opts.Batch {
		off := (b*cfg.Heads + h) * t * d // (b, h) block of (T, d)
		for i := range t * d {
			v := 0.0
			if fill != nil {
				v = fill[i]
			}
			set(mask, off+i, 0)
			set(filled, off+i, v)
		}
	}
	return nil
}

// PatchHead replaces head h of layer l by its output in another run (clean,
// that layer's (B, H, T, d) head outputs, flat), in every row of the batch:
// at every position when pos is -1, else at position pos alone (activation
// patching). Other heads and positions keep their current mask and fill.
func (gr *Graph) PatchHead(l, h, pos int, clean []float64) error {
	cfg := gr.Model.Config
	if gr.HeadMasks == nil {
		return errors.New("patch head: the graph was built without HeadMask")
	}
	b, t, d := gr.Opts.Batch, gr.Opts.SeqLen, cfg.DModel/cfg.Heads
	switch {
	case l < 0 || l >= cfg.Layers || h < 0 || h >= cfg.Heads:
		return errors.Errorf("patch head: layer %d head %d outside the model's %d layers of %d heads", l, h, cfg.Layers, cfg.Heads)
	case pos < -1 || pos >= t:
		return errors.Errorf("patch head: position %d outside 0..%d", pos, t-1)
	case len(clean) != b*cfg.Heads*t*d:
		return errors.Errorf("patch head: %d clean values, want B*H*T*d = %d", len(clean), b*cfg.Heads*t*d)
	}
	mask := gr.HeadMasks[l].Value().(*tensor.Dense)
	filled := gr.HeadFills[l].Value().(*tensor.Dense)
	for bi := range b {
		for p := range t {
			if pos >= 0 && p != pos {
				continue
			}
			off := ((bi*cfg.Heads+h)*t + p) * d
			for i := range d {
				set(mask, off+i, 0)
				set(filled, off+i, clean[off+i])
			}
		}
	}
	return nil
}

// MeanHeadOutputs returns, from the last run of a machine of this graph, each
// head's output averaged over the batch's first rows rows: [layer][head]
// (T*d) row-major (t, channel), the fill of mean ablation.
func (gr *Graph) MeanHeadOutputs(rows int) ([][][]float64, error) {
	cfg := gr.Model.Config
	b, t, d := gr.Opts.Batch, gr.Opts.SeqLen, cfg.DModel/cfg.Heads
	if rows < 1 || rows > b {
		return nil, errors.Errorf("mean head outputs: %d rows, want 1..%d (the batch)", rows, b)
	}
	out := make([][][]float64, len(gr.HeadOutputs))
	for l, node := range gr.HeadOutputs {
		v, ok := node.Value().(*tensor.Dense)
		if !ok || v.Shape().TotalSize() != b*cfg.Heads*t*d {
			return nil, errors.Errorf("mean head outputs: layer %d has no (B, H, T, d) value (run the machine first)", l)
		}
		out[l] = make([][]float64, cfg.Heads)
		for h := range cfg.Heads {
			mean := make([]float64, t*d)
			for row := range rows {
				off := (row*cfg.Heads + h) * t * d // (row, h) block of (T, d)
				for i := range mean {
					mean[i] += valueAt(v, off+i)
				}
			}
			for i := range mean {
				mean[i] /= float64(rows)
			}
			out[l][h] = mean
		}
	}
	return out, nil
}

func setAll(d *tensor.Dense, v float64) {
	switch data := d.Data().(type) {
	case []float32:
		for i := range data {
			data[i] = float32(v)
		}
	case []float64:
		for i := range data {
			data[i] = v
		}
	}
}

func set(d *tensor.Dense, i int, v float64) {
	switch data := d.Data().(type) {
	case []float32:
		data[i] = float32(v)
	case []float64:
		data[i] = v
	}
}

func valueAt(d *tensor.Dense, i int) float64 {
	switch data := d.Data().(type) {
	case []float32:
		return float64(data[i])
	case []float64:
		return data[i]
	}
	return 0
}
