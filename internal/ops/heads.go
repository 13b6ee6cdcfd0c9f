package ops

import (
	"fmt"
	"unsafe"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Heads are the sizes of attention's per-head tensors: B sequences of T
// positions, H heads of D channels each.
type Heads struct{ B, T, H, D int }

// headsOf reads the sizes of a (B, H, T, D) tensor.
func headsOf(s tensor.Shape) Heads { return Heads{B: s[0], H: s[1], T: s[2], D: s[3]} }

func (h Heads) String() string { return fmt.Sprintf("B=%d,T=%d,H=%d,D=%d", h.B, h.T, h.H, h.D) }

// split is (B, H, T, D), one part.
func (h Heads) split() tensor.Shape { return tensor.Shape{h.B, h.H, h.T, h.D} }

// scores is (B, H, T, T), a query row against every key.
func (h Heads) scores() tensor.Shape { return tensor.Shape{h.B, h.H, h.T, h.T} }

// packed is (P, B, H, T, D), or split() for P = 1.
func (h Heads) packed(parts int) tensor.Shape {
	if parts == 1 {
		return h.split()
	}
	return append(tensor.Shape{parts}, h.split()...)
}

// flat is (B*T, P*H*D): rows (b, t), columns [part | head | channel].
func (h Heads) flat(parts int) tensor.Shape { return tensor.Shape{h.B * h.T, parts * h.H * h.D} }

// SplitHeads maps x (B*T, P*H*D), rows (b, t) and columns [part p | head h |
// channel c], to (P, B, H, T, D): for P = 3 the q, k and v of every head,
// each (b, h) block contiguous (T, D). It is Reshape (B, T, P, H, D) then
// Transpose (2, 0, 3, 1, 4) done in one pass of plain copies, without
// Gorgonia's iterator-driven Transpose. For P = 1 the result is (B, H, T, D).
func SplitHeads(x *gorgonia.Node, s Heads, parts int) (*gorgonia.Node, error) {
	if s.B <= 0 || s.T <= 0 || s.H <= 0 || s.D <= 0 || parts <= 0 || !x.Shape().Eq(s.flat(parts)) {
		return nil, errors.Errorf("split heads: input %v is not (B*T, P*H*D) for %v, P=%d", x.Shape(), s, parts)
	}
	return apply(headsDef{split: true, Heads: s, parts: parts}, x) // (P, B, H, T, D), or (B, H, T, D) for P = 1
}

// MergeHeads is the inverse of SplitHeads for P = 1: y (B, H, T, D) to
// (B*T, H*D), i.e. Transpose (0, 2, 1, 3) then Reshape.
func MergeHeads(y *gorgonia.Node) (*gorgonia.Node, error) {
	s := y.Shape()
	if len(s) != 4 {
		return nil, errors.Errorf("merge heads: input %v is not (B, H, T, D)", s)
	}
	return apply(headsDef{Heads: headsOf(s), parts: 1}, y) // (B*T, H*D)
}

// headsDef is SplitHeads (split) or MergeHeads (!split) for fixed sizes; each
// is the other's gradient, as a permutation's adjoint is its inverse.
type headsDef struct {
	split bool
	Heads
	parts int
}

func (d headsDef) String() string {
	if d.split {
		return fmt.Sprintf("SplitHeads{%v,P=%d}", d.Heads, d.parts)
	}
	return fmt.Sprintf("MergeHeads{%v,P=%d}", d.Heads, d.parts)
}

func (d headsDef) shapes() (in, out tensor.Shape) {
	if d.split {
		return d.flat(d.parts), d.packed(d.parts)
	}
	return d.packed(d.parts), d.flat(d.parts)
}

func (d headsDef) signature() signature {
	in, out := d.shapes()
	return signature{in: []input{floatIn(len(in), true)}, out: len(out)}
}

func (d headsDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	in, out := d.shapes()
	return fixedShape(d, s[0], in, out)
}

func (d headsDef) run(a *args) error {
	return byDtype(d, a, permuteHeads[float64], permuteHeads[float32])
}

func (d headsDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	d.split = !d.split
	return gradOf(d, dy)
}

// permuteHeads copies every D-long run between flat (B*T, P*H*D) and heads
// (P, B, H, T, D) layout, in the direction of d; batch rows are spread over
// the cores. The copy works on float32 words (a float64 run of D values is
// 2D words: only bits move), so runs of 8, 16 or 32 words, the head widths
// of the benchmark models, are fixed-size array copies, which compile to a
// few vector moves; in a generic function they would be memmove calls.
func permuteHeads[T float](d headsDef, a *args) {
	src, dst := data[T](a, 0), out[T](a)
	run := d.D
	words, isFloat32 := any(src).([]float32)
	to, _ := any(dst).([]float32)
	if !isFloat32 { // float64: two words per value
		s64, d64 := any(src).([]float64), any(dst).([]float64)
		words = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s64))), 2*len(s64))
		to = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(d64))), 2*len(d64))
		run *= 2
	}
	kernels.ParallelFor(d.B, float64(d.T*d.parts*d.H*run), func(lo, hi int) {
		permuteBatchRows(d, words, to, run, lo, hi)
	})
}

// permuteBatchRows does batch rows [lo, hi) of permuteHeads with runs of
// run words: for each (part, head), the T runs of a batch row go to (or
// come from) one contiguous (T, run) block.
func permuteBatchRows(d headsDef, src, dst []float32, run, lo, hi int) {
	b, t, h, p := d.B, d.T, d.H, d.parts
	width := p * h * run
	for bi := lo; bi < hi; bi++ {
		rows := bi * t * width // first flat word of batch row bi
		for pi := 0; pi < p; pi++ {
			for hh := 0; hh < h; hh++ {
				block := (((pi*b+bi)*h + hh) * t) * run // its (T, run) block in heads layout
				col := rows + (pi*h+hh)*run             // its columns in the first flat row
				if d.split {
					copyRuns(dst[block:block+t*run], src[col:], run, run, width)
				} else {
					copyRuns(dst[col:], src[block:block+t*run], run, width, run)
				}
			}
		}
	}
}

// copyRuns copies runs of d words, the i-th from src[i*srcStride] to
// dst[i*dstStride], as many runs as fit in the shorter of the two.
func copyRuns(dst, src []float32, d, dstStride, srcStride int) {
	n := min((len(dst)-d)/dstStride, (len(src)-d)/srcStride) + 1
	switch d {
	case 8:
		for i := 0; i < n; i++ {
			*(*[8]float32)(dst[i*dstStride:]) = *(*[8]float32)(src[i*srcStride:])
		}
	case 16:
		for i := 0; i < n; i++ {
			*(*[16]float32)(dst[i*dstStride:]) = *(*[16]float32)(src[i*srcStride:])
		}
	default:
		for i := 0; i < n; i++ {
			copy(dst[i*dstStride:i*dstStride+d], src[i*srcStride:])
		}
	}
}
