package layers

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// splitHeads maps x (B*T, P*D), rows (b, t) and columns [part p | head h |
// channel c], to (P, B, H, T, d), d = D/H: for P = 3 the q, k and v of every
// head, each (b, h) block contiguous (T, d). It is Reshape (B, T, P, H, d)
// then Transpose (2, 0, 3, 1, 4) done in one pass of plain copies, without
// Gorgonia's iterator-driven Transpose. For P = 1 the result is (B, H, T, d).
func splitHeads(x *gorgonia.Node, batch, seqLen, heads, parts int) (*gorgonia.Node, error) {
	s := x.Shape()
	if len(s) != 2 || s[0] != batch*seqLen || parts <= 0 || heads <= 0 || s[1]%(parts*heads) != 0 {
		return nil, errors.Errorf("split heads: input %v is not (B*T, P*H*d) for B %d, T %d, H %d, P %d", s, batch, seqLen, heads, parts)
	}
	op := newHeadsOp(true, batch, seqLen, heads, s[1]/(parts*heads), parts)
	return gorgonia.ApplyOp(op, x) // (P, B, H, T, d), or (B, H, T, d) for P = 1
}

// mergeHeads is the inverse of splitHeads for P = 1: y (B, H, T, d) to
// (B*T, H*d), i.e. Transpose (0, 2, 1, 3) then Reshape.
func mergeHeads(y *gorgonia.Node) (*gorgonia.Node, error) {
	s := y.Shape()
	if len(s) != 4 {
		return nil, errors.Errorf("merge heads: input %v is not (B, H, T, d)", s)
	}
	return gorgonia.ApplyOp(newHeadsOp(false, s[0], s[2], s[1], s[3], 1), y) // (B*T, H*d)
}

// headsOp is splitHeads (split) or mergeHeads (!split) for fixed sizes; each
// is the other's gradient, as a permutation's adjoint is its inverse.
type headsOp struct {
	opBase
	split                bool
	batch, seqLen, heads int
	dHead, parts         int
	out                  *buffer
}

func newHeadsOp(split bool, batch, seqLen, heads, dHead, parts int) headsOp {
	name := "MergeHeads"
	if split {
		name = "SplitHeads"
	}
	return headsOp{
		opBase: opBase{fmt.Sprintf("%s{B=%d,T=%d,H=%d,d=%d,P=%d}", name, batch, seqLen, heads, dHead, parts)},
		split:  split, batch: batch, seqLen: seqLen, heads: heads, dHead: dHead, parts: parts, out: newBuffer(),
	}
}

// flatShape is (B*T, P*H*d); headShape is (P, B, H, T, d), without P when 1.
func (op headsOp) flatShape() tensor.Shape {
	return tensor.Shape{op.batch * op.seqLen, op.parts * op.heads * op.dHead}
}

func (op headsOp) headShape() tensor.Shape {
	s := tensor.Shape{op.batch, op.heads, op.seqLen, op.dHead}
	if op.parts > 1 {
		s = append(tensor.Shape{op.parts}, s...)
	}
	return s
}

func (op headsOp) shapes() (in, out tensor.Shape) {
	if op.split {
		return op.flatShape(), op.headShape()
	}
	return op.headShape(), op.flatShape()
}

func (op headsOp) Arity() int { return 1 }

func (op headsOp) Type() hm.Type {
	in, out := op.shapes()
	return hm.NewFnType(floatTensor(len(in)), floatTensor(len(out)))
}

func (op headsOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 1)
	if err != nil {
		return nil, err
	}
	in, out := op.shapes()
	if !s[0].Eq(in) {
		return nil, errors.Errorf("%s: input shape %v, want %v", op.desc, s[0], in)
	}
	return out, nil
}

func (op headsOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	in, out := op.shapes()
	x, err := denseArg(inputs, 0, len(in), op.desc)
	if err != nil {
		return nil, err
	}
	if err := sameDtype(op.desc, x); err != nil {
		return nil, err
	}
	if !x.Shape().Eq(in) {
		return nil, errors.Errorf("%s: input shape %v, want %v", op.desc, x.Shape(), in)
	}
	y := op.out.get(x.Dtype(), out...)
	if x.Dtype() == tensor.Float64 {
		permuteHeads(op, x.Float64s(), y.Float64s())
	} else {
		permuteHeads(op, x.Float32s(), y.Float32s())
	}
	return y, nil
}

// permuteHeads copies every d-long run between flat (B*T, P*H*d) and heads
// (P, B, H, T, d) layout, in the direction of op. Runs of 8 or 16 (the head
// widths of the benchmark models) are copied as fixed-size arrays, which
// compiles to a few vector moves instead of a memmove call each. Batch rows
// are spread over the cores.
func permuteHeads[T float](op headsOp, src, dst []T) {
	b, t, h, d, p := op.batch, op.seqLen, op.heads, op.dHead, op.parts
	width := p * h * d
	parallelFor(b, float64(t*width), func(lo, hi int) {
		permuteBatchRows(op, src, dst, lo, hi)
	})
}

func permuteBatchRows[T float](op headsOp, src, dst []T, lo, hi int) {
	b, t, h, d, p := op.batch, op.seqLen, op.heads, op.dHead, op.parts
	width := p * h * d
	for bi := lo; bi < hi; bi++ {
		for ti := 0; ti < t; ti++ {
			flat := (bi*t + ti) * width
			for pi := 0; pi < p; pi++ {
				for hi := 0; hi < h; hi++ {
					f := flat + (pi*h+hi)*d
					hd := (((pi*b+bi)*h+hi)*t + ti) * d
					from, to := src[f:f+d], dst[hd:hd+d]
					if !op.split {
						from, to = src[hd:hd+d], dst[f:f+d]
					}
					switch d {
					case 8:
						*(*[8]T)(to) = *(*[8]T)(from)
					case 16:
						*(*[16]T)(to) = *(*[16]T)(from)
					default:
						copy(to, from)
					}
				}
			}
		}
	}
}

func (op headsOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op headsOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	inv := newHeadsOp(!op.split, op.batch, op.seqLen, op.heads, op.dHead, op.parts)
	dx, err := gorgonia.ApplyOp(inv, grad)
	if err != nil {
		return nil, errors.Wrapf(err, "%s gradient", op.desc)
	}
	return gorgonia.Nodes{dx}, nil
}
