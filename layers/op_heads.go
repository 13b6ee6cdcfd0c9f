package layers

import (
	"fmt"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
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
// (P, B, H, T, d) layout, in the direction of op; batch rows are spread over
// the cores. The copy works on float32 words (a float64 run of d values is
// 2d words: only bits move), so runs of 8, 16 or 32 words, the head widths
// of the benchmark models, are fixed-size array copies, which compile to a
// few vector moves; in a generic function they would be memmove calls.
func permuteHeads[T float](op headsOp, src, dst []T) {
	d := op.dHead
	words, isFloat32 := any(src).([]float32)
	out, _ := any(dst).([]float32)
	if !isFloat32 { // float64: two words per value
		s64, d64 := any(src).([]float64), any(dst).([]float64)
		words = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s64))), 2*len(s64))
		out = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(d64))), 2*len(d64))
		d *= 2
	}
	t, width := op.seqLen, op.parts*op.heads*d
	kernels.ParallelFor(op.batch, float64(t*width), func(lo, hi int) {
		permuteBatchRows(op, words, out, d, lo, hi)
	})
}

// permuteBatchRows does batch rows [lo, hi) of permuteHeads with runs of d
// words: for each (part, head), the T runs of a batch row go to (or come
// from) one contiguous (T, d) block.
func permuteBatchRows(op headsOp, src, dst []float32, d, lo, hi int) {
	b, t, h, p := op.batch, op.seqLen, op.heads, op.parts
	width := p * h * d
	for bi := lo; bi < hi; bi++ {
		rows := bi * t * width // first flat word of batch row bi
		for pi := 0; pi < p; pi++ {
			for hh := 0; hh < h; hh++ {
				block := (((pi*b+bi)*h + hh) * t) * d // its (T, d) block in heads layout
				col := rows + (pi*h+hh)*d             // its columns in the first flat row
				if op.split {
					copyRuns(dst[block:block+t*d], src[col:], d, d, width)
				} else {
					copyRuns(dst[col:], src[block:block+t*d], d, width, d)
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

func (op headsOp) DiffWRT(inputs int) []bool { return []bool{true} }

func (op headsOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	inv := newHeadsOp(!op.split, op.batch, op.seqLen, op.heads, op.dHead, op.parts)
	dx, err := gorgonia.ApplyOp(inv, grad)
	if err != nil {
		return nil, errors.Wrapf(err, "%s gradient", op.desc)
	}
	return gorgonia.Nodes{dx}, nil
}
