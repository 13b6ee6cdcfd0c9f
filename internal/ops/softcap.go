package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// SoftCap is cap·tanh(scale·x / cap) element by element, x of any rank:
// Gemma 2's soft-capping of the attention scores (scale the scores' factor)
// and of the logits (scale 1), in one op so that nothing in between is
// stored. Every value stays inside (-cap, cap) and a value much smaller
// than cap is scale·x almost exactly. Gradient, from the output y:
// dx = scale·(1 - (y/cap)²)·dy.
func SoftCap(x *gorgonia.Node, scale, cap float64) (*gorgonia.Node, error) {
	for _, v := range []struct {
		name  string
		value float64
	}{{"scale", scale}, {"cap", cap}} {
		if math.IsNaN(v.value) || math.IsInf(v.value, 0) || v.value <= 0 {
			return nil, errors.Errorf("soft-cap: %s %v must be positive and finite", v.name, v.value)
		}
	}
	if x.Dims() == 0 {
		return nil, errors.Errorf("soft-cap: input shape %v, want a tensor", x.Shape())
	}
	return apply(softCapDef{rank: x.Dims(), scale: scale, cap: cap}, x) // same shape as x
}

// softCapDef is the soft-cap or, when backward, its gradient (y, dy) -> dx.
type softCapDef struct {
	rank       int
	scale, cap float64
	backward   bool
}

func (d softCapDef) String() string {
	name := "SoftCap"
	if d.backward {
		name += "Grad"
	}
	return fmt.Sprintf("%s{rank=%d,scale=%v,cap=%v}", name, d.rank, d.scale, d.cap)
}

func (d softCapDef) signature() signature {
	if d.backward {
		return signature{in: []input{floatIn(d.rank, false), floatIn(d.rank, false)}, out: d.rank}
	}
	return signature{in: []input{floatIn(d.rank, true)}, out: d.rank}
}

func (d softCapDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same(d.String(), s...) }

func (d softCapDef) run(a *args) error { return byDtype(d, a, softCap[float64], softCap[float32]) }

// softCap works in float64 element by element (math.Tanh), the elements
// spread over the cores.
func softCap[T float](d softCapDef, a *args) {
	x, y := data[T](a, 0), out[T](a)
	var dy []T
	if d.backward {
		dy = data[T](a, 1)
	}
	kernels.ParallelFor(len(x), pointwiseCost, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if d.backward { // x holds the forward's output here
				r := float64(x[i]) / d.cap
				y[i] = T(d.scale * (1 - r*r) * float64(dy[i]))
				continue
			}
			y[i] = T(d.cap * math.Tanh(d.scale*float64(x[i])/d.cap))
		}
	})
}

func (d softCapDef) grad(_ gorgonia.Nodes, y, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.backward {
		return nil, errors.New("no second derivative")
	}
	back := d
	back.backward = true
	dx, err := apply(back, y, dy) // same shape as x
	return gorgonia.Nodes{dx}, err
}
