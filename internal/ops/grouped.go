package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// SplitGroupedHeads is SplitHeads for grouped-query attention: x (B*T,
// (H+2G)*D) holds, in its columns, H query heads, then G key heads and G
// value heads ([q | k | v], head h at columns [h*D, (h+1)*D) of its part).
// The result is (3, B, H, T, D) as SplitHeads gives it for G = H, with
// query head h reading key and value head h/(H/G): each of the G key and
// value heads serves H/G consecutive query heads, as PyTorch's
// repeat_interleave(H/G) of k and v does. The gradient sums each key and
// value head's H/G copies back.
func SplitGroupedHeads(x *gorgonia.Node, s Heads, groups int) (*gorgonia.Node, error) {
	if s.B <= 0 || s.T <= 0 || s.H <= 0 || s.D <= 0 || groups <= 0 || s.H%groups != 0 {
		return nil, errors.Errorf("split grouped heads: %d key/value heads for %v: want a divisor of H", groups, s)
	}
	if want := (tensor.Shape{s.B * s.T, (s.H + 2*groups) * s.D}); !x.Shape().Eq(want) {
		return nil, errors.Errorf("split grouped heads: input %v, want %v for %v and %d key/value heads", x.Shape(), want, s, groups)
	}
	return apply(groupedDef{Heads: s, groups: groups}, x) // (3, B, H, T, D)
}

// groupedDef is SplitGroupedHeads or, when merge, its gradient: (3, B, H,
// T, D) back to (B*T, (H+2G)*D), summing over each group.
type groupedDef struct {
	Heads
	groups int
	merge  bool
}

func (d groupedDef) String() string {
	return fmt.Sprintf("GroupedHeads{%v,G=%d,merge=%t}", d.Heads, d.groups, d.merge)
}

// shapes are the op's input and output shapes: flat to packed, or packed to
// flat when merging.
func (d groupedDef) shapes() (in, out tensor.Shape) {
	flat, packed := tensor.Shape{d.B * d.T, (d.H + 2*d.groups) * d.D}, d.packed(3)
	if d.merge {
		return packed, flat
	}
	return flat, packed
}

func (d groupedDef) signature() signature {
	if d.merge {
		return signature{in: []input{floatIn(5, true)}, out: 2}
	}
	return signature{in: []input{floatIn(2, true)}, out: 5}
}

func (d groupedDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	in, out := d.shapes()
	return fixedShape(d, s[0], in, out)
}

func (d groupedDef) run(a *args) error {
	return byDtype(d, a, groupHeads[float64], groupHeads[float32])
}

func (d groupedDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	d.merge = !d.merge
	return gradOf(d, dy)
}

// groupHeads copies every D-long run between the flat and packed layouts
// (split), or adds the packed runs into the zeroed flat layout (merge),
// batch rows spread over the cores.
func groupHeads[T float](d groupedDef, a *args) {
	src, dst := data[T](a, 0), out[T](a)
	width, per := (d.H+2*d.groups)*d.D, d.H/d.groups
	if d.merge {
		clear(dst)
	}
	kernels.ParallelFor(d.B, float64(3*d.H*d.T*d.D), func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			for part := 0; part < 3; part++ {
				for h := 0; h < d.H; h++ {
					col := h * d.D // query head h
					if part > 0 {
						col = (d.H + (part-1)*d.groups + h/per) * d.D
					}
					for t := 0; t < d.T; t++ {
						flat := (bi*d.T+t)*width + col
						packed := (((part*d.B+bi)*d.H+h)*d.T + t) * d.D
						if d.merge {
							for c := 0; c < d.D; c++ {
								dst[flat+c] += src[packed+c]
							}
							continue
						}
						copy(dst[packed:packed+d.D], src[flat:flat+d.D])
					}
				}
			}
		}
	})
}
