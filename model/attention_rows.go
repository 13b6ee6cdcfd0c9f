package model

import (
	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// AttentionRows returns the attention weights of the last run of a machine
// from NewMachine, copied to float64 as [layer][batch][head][query][key].
func (gr *Graph) AttentionRows() ([][][][][]float64, error) {
	b, h, t := gr.Opts.Batch, gr.Model.Config.Heads, gr.Opts.SeqLen
	att := make([][][][][]float64, len(gr.Attention))
	for l, node := range gr.Attention {
		flat, err := float64s(node.Value())
		if err != nil || len(flat) != b*h*t*t {
			return nil, errors.Errorf("attention of layer %d: no (B, H, T, T) = (%d, %d, %d, %d) value (run the machine first)", l, b, h, t, t)
		}
		att[l] = make([][][][]float64, b)
		for row := range b {
			att[l][row] = make([][][]float64, h)
			for hd := range h {
				block := flat[(row*h+hd)*t*t:][:t*t] // the (row, hd) (T, T) block
				rows := make([][]float64, t)
				for q := range t {
					rows[q] = block[q*t : (q+1)*t : (q+1)*t]
				}
				att[l][row][hd] = rows
			}
		}
	}
	return att, nil
}

// float64s copies a float32 or float64 tensor's values to a new []float64.
func float64s(v any) ([]float64, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("value %T is not a dense tensor", v)
	}
	switch data := d.Data().(type) {
	case []float32:
		out := make([]float64, len(data))
		for i, x := range data {
			out[i] = float64(x)
		}
		return out, nil
	case []float64:
		return append([]float64(nil), data...), nil
	}
	return nil, errors.Errorf("tensor of %v, want float32 or float64", d.Dtype())
}
