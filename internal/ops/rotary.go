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
// convention of GPT-NeoX and Llama on the first R = 2·len(freqs) channels
// of each head: channel i < R/2 is paired with channel i+R/2, and the pair
// at position t turns by the angle (t+offset) · freqs[i]:
//
//	y[i]       = x[i] cos - x[i+R/2] sin
//	y[i+R/2]   = x[i+R/2] cos + x[i] sin
//
// Channels R and beyond pass unturned (partial rotary: GPT-NeoX's
// rotary_ndims, Phi's partial_rotary_factor). freqs are the per-pair
// inverse frequencies, base^(-2i/R) for plain rotary positions (see
// RotaryFrequencies), rescaled by a rope scaling. offset is the position
// of the first row (0 for a whole sequence, the cache length when
// decoding). The gradient is the inverse rotation (the transpose of a
// rotation), so it is exact.
func Rotary(qkv *gorgonia.Node, freqs []float64, offset int) (*gorgonia.Node, error) {
	s := qkv.Shape()
	if len(s) != 5 || s[0] != 3 {
		return nil, errors.Errorf("rotary: input %v is not (3, B, H, T, D)", s)
	}
	if err := CheckFrequencies(freqs, s[4]); err != nil {
		return nil, errors.Wrap(err, "rotary")
	}
	if offset < 0 {
		return nil, errors.Errorf("rotary: offset %d is negative", offset)
	}
	return apply(rotaryDef{Heads: headsOf(s[1:]), freqs: freqs, offset: offset}, qkv) // (3, B, H, T, D)
}

// CheckFrequencies reports inverse frequencies that do not fit a head of
// d channels: none, more pairs than d/2, or one that is not finite and
// positive.
func CheckFrequencies(freqs []float64, d int) error {
	if len(freqs) == 0 || 2*len(freqs) > d {
		return errors.Errorf("%d rotary pairs for a head of %d channels: want 1 to %d", len(freqs), d, d/2)
	}
	for i, f := range freqs {
		if !(f > 0) || math.IsInf(f, 0) {
			return errors.Errorf("rotary inverse frequency %d is %v: must be finite and positive", i, f)
		}
	}
	return nil
}

// RotaryFrequencies are the inverse frequencies of plain rotary positions
// turning dims channels: base^(-2i/dims) for the dims/2 pairs.
func RotaryFrequencies(base float64, dims int) []float64 {
	freqs := make([]float64, dims/2)
	for i := range freqs {
		freqs[i] = math.Pow(base, -2*float64(i)/float64(dims))
	}
	return freqs
}

// rotaryDef is Rotary, or its gradient (the rotation by minus the angle)
// when inverse.
type rotaryDef struct {
	Heads
	freqs   []float64
	offset  int
	inverse bool
}

func (d rotaryDef) String() string {
	return fmt.Sprintf("Rotary{%v,pairs=%d,offset=%d,inverse=%t}", d.Heads, len(d.freqs), d.offset, d.inverse)
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

// RotaryAngles returns cos and sin (T, len(freqs)) of the rotation of pair
// i at position offset+t, row-major: the tables both paths multiply by.
func RotaryAngles(t, offset int, freqs []float64) (cos, sin []float64) {
	half := len(freqs)
	cos, sin = make([]float64, t*half), make([]float64, t*half)
	for p := 0; p < t; p++ {
		for i, f := range freqs {
			angle := float64(offset+p) * f
			cos[p*half+i], sin[p*half+i] = math.Cos(angle), math.Sin(angle)
		}
	}
	return cos, sin
}

// rotary turns the first 2·len(freqs) channels of every (T, D) block of q
// and k, copies their other channels, and copies v.
func rotary[T float](d rotaryDef, a *args) {
	x, y := data[T](a, 0), out[T](a)
	cos, sin := RotaryAngles(d.T, d.offset, d.freqs)
	if d.inverse {
		for i := range sin {
			sin[i] = -sin[i]
		}
	}
	block, half := d.T*d.D, len(d.freqs)
	rotated := 2 * d.B * d.H // the (T, D) blocks of q and k come first
	copy(y[rotated*block:], x[rotated*block:])
	kernels.ParallelFor(rotated, float64(2*block), func(lo, hi int) {
		for bl := lo; bl < hi; bl++ {
			for p := 0; p < d.T; p++ {
				row := bl*block + p*d.D
				xr, yr := x[row:row+d.D], y[row:row+d.D]
				copy(yr[2*half:], xr[2*half:])
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
