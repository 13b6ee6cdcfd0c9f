package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Rotary applies rotary position embeddings (Su et al., RoFormer) to the q
// and k of qkv (3, B, H, T, D), leaving v as it is. It uses the rotate-half
// convention of GPT-NeoX and Llama: channel i of a head is paired with
// channel i+D/2, and the pair at position t turns by the angle
// (t+offset) * base^(-2i/D):
//
//	y[i]     = x[i] cos - x[i+D/2] sin
//	y[i+D/2] = x[i+D/2] cos + x[i] sin
//
// offset is the position of the first row (0 for a whole sequence, the
// cache length when decoding). D must be even. The gradient is the inverse
// rotation (the transpose of a rotation), so it is exact.
func Rotary(qkv *gorgonia.Node, base float64, offset int) (*gorgonia.Node, error) {
	s := qkv.Shape()
	if len(s) != 5 || s[0] != 3 {
		return nil, errors.Errorf("rotary: input %v is not (3, B, H, T, D)", s)
	}
	if s[4]%2 != 0 {
		return nil, errors.Errorf("rotary: head size %d is odd; rotary pairs channel i with i+D/2", s[4])
	}
	if !(base > 1) || math.IsInf(base, 0) || offset < 0 {
		return nil, errors.Errorf("rotary: base %v must be finite and > 1, offset %d not negative", base, offset)
	}
	return apply(rotaryDef{Heads: headsOf(s[1:]), base: base, offset: offset}, qkv) // (3, B, H, T, D)
}

// rotaryDef is Rotary, or its gradient (the rotation by minus the angle)
// when inverse.
type rotaryDef struct {
	Heads
	base    float64
	offset  int
	inverse bool
}

func (d rotaryDef) String() string {
	return fmt.Sprintf("Rotary{%v,base=%v,offset=%d,inverse=%t}", d.Heads, d.base, d.offset, d.inverse)
}

func (d rotaryDef) signature() signature {
	return signature{in: []input{floatIn(5, true)}, out: 5}
}

func (d rotaryDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	return fixedShape(d, s[0], d.packed(3), d.packed(3))
}

func (d rotaryDef) run(a *args) error { return byDtype(d, a, rotary[float64], rotary[float32]) }

func (d rotaryDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	d.inverse = !d.inverse
	return gradOf(d, dy)
}

// RotaryAngles returns cos and sin (T, D/2) of the rotation of pair i at
// position offset+t, row-major: the tables both paths multiply by.
func RotaryAngles(t, d, offset int, base float64) (cos, sin []float64) {
	half := d / 2
	cos, sin = make([]float64, t*half), make([]float64, t*half)
	for p := 0; p < t; p++ {
		for i := 0; i < half; i++ {
			angle := float64(offset+p) * math.Pow(base, -2*float64(i)/float64(d))
			cos[p*half+i], sin[p*half+i] = math.Cos(angle), math.Sin(angle)
		}
	}
	return cos, sin
}

// rotary turns every (T, D) block of q and k, and copies v.
func rotary[T float](d rotaryDef, a *args) {
	x, y := data[T](a, 0), out[T](a)
	cos, sin := RotaryAngles(d.T, d.D, d.offset, d.base)
	if d.inverse {
		for i := range sin {
			sin[i] = -sin[i]
		}
	}
	block, half := d.T*d.D, d.D/2
	rotated := 2 * d.B * d.H // the (T, D) blocks of q and k come first
	copy(y[rotated*block:], x[rotated*block:])
	kernels.ParallelFor(rotated, float64(2*block), func(lo, hi int) {
		for bl := lo; bl < hi; bl++ {
			for p := 0; p < d.T; p++ {
				row := bl*block + p*d.D
				xr, yr := x[row:row+d.D], y[row:row+d.D]
				cs, sn := cos[p*half:(p+1)*half], sin[p*half:(p+1)*half]
				for i := 0; i < half; i++ {
					x1, x2 := float64(xr[i]), float64(xr[i+half])
					yr[i] = T(x1*cs[i] - x2*sn[i])
					yr[i+half] = T(x2*cs[i] + x1*sn[i])
				}
			}
		}
	})
}
