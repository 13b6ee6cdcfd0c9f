package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskScores returns the attention scores as TransformerLens's
// hook_attn_scores holds them: scale*scores (B, H, T, T), plus ALiBi's
// bias -Slopes[h]*|i-j| when mask has slopes, on the keys each query sees,
// and -Inf on the keys mask or keyMask (B, T; 0 hides a key) hide.
// MaskedSoftmax of them at scale 1, with mask's keys and no slopes, is
// MaskedSoftmax of the scores with mask at scale. The gradient is scale on
// the keys seen and 0 on those hidden.
func MaskScores(scores, keyMask *gorgonia.Node, mask Mask, scale float64) (*gorgonia.Node, error) {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("mask scores: scale %v must be positive and finite", scale)
	}
	d := maskScoresDef{mask: mask, scale: scale, keyMask: keyMask != nil}
	if keyMask == nil {
		return apply(d, scores) // (B, H, T, T)
	}
	return apply(d, scores, keyMask) // (B, H, T, T)
}

// maskScoresDef is MaskScores, or with backward its gradient: dy (B, H, T,
// T) to scale*dy on the keys seen and 0 on the others.
type maskScoresDef struct {
	mask              Mask
	scale             float64
	keyMask, backward bool
}

func (d maskScoresDef) String() string {
	return fmt.Sprintf("MaskScores(%s,scale=%v,keymask=%t,backward=%t)", d.mask, d.scale, d.keyMask, d.backward)
}

func (d maskScoresDef) signature() signature {
	in := []input{floatIn(4, !d.backward)}
	if d.keyMask {
		in = append(in, floatIn(2, false))
	}
	return signature{in: in, out: 4}
}

func (d maskScoresDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	x := s[0]
	if x[2] != x[3] || d.mask.Slopes != nil && len(d.mask.Slopes) != x[1] {
		return nil, errors.Errorf("mask scores: scores %v, want (B, H, T, T) with %d slopes for H", x, len(d.mask.Slopes))
	}
	if d.keyMask && !s[1].Eq(tensor.Shape{x[0], x[2]}) {
		return nil, errors.Errorf("mask scores: key mask %v, want (%d, %d)", s[1], x[0], x[2])
	}
	return x.Clone(), nil
}

func (d maskScoresDef) run(a *args) error {
	return byDtype(d, a, maskScores[float64], maskScores[float32])
}

// maskScores writes every entry of the output: a row's seen keys from its
// scores (or, backward, its gradient), the others -Inf (backward 0).
func maskScores[T float](d maskScoresDef, a *args) {
	s := a.in[0].Shape()
	h, t := s[1], s[2]
	x, y := data[T](a, 0), out[T](a)
	var keep []T
	if d.keyMask {
		keep = data[T](a, 1)
	}
	hidden := T(math.Inf(-1))
	if d.backward {
		hidden = 0
	}
	for r := range len(x) / max(t, 1) {
		i, head, row := r%t, r/t%h, r/(h*t)
		lo, hi := d.mask.keys(i, t)
		for j := range t {
			at := r*t + j
			if j < lo || j >= hi || keep != nil && keep[row*t+j] == 0 {
				y[at] = hidden
				continue
			}
			v := T(d.scale) * x[at]
			if d.mask.Slopes != nil && !d.backward {
				v -= T(d.mask.Slopes[head] * math.Abs(float64(i-j)))
			}
			y[at] = v
		}
	}
}

func (d maskScoresDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	back := d
	back.backward = true
	inputs := gorgonia.Nodes{dy}
	if d.keyMask {
		inputs = append(inputs, in[1])
	}
	dx, err := apply(back, inputs...)
	if d.keyMask {
		return gorgonia.Nodes{dx, nil}, err
	}
	return gorgonia.Nodes{dx}, err
}
