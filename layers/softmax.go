package layers

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// MaskedSoftmax returns softmax over the last axis of scale*scores for
// attention scores (B, H, T, T) (rows = queries, columns = keys). When causal,
// key j is hidden from query i > ... i.e. allowed only for j <= i; when keyMask
// (B, T) is non-nil, keys whose mask entry is 0 are hidden. Hidden entries
// are exactly 0, each row's max is its own (so logits of any size are safe),
// and a row with every key hidden is all zeros rather than NaN.
//
// It replaces gorgonia.SoftMax, whose last-axis kernel subtracts the
// tensor's first element instead of each row's max (see docs/gorgonia.md).
func MaskedSoftmax(scores, keyMask *gorgonia.Node, causal bool, scale float64) (*gorgonia.Node, error) {
	s := scores.Shape()
	if len(s) != 4 || s[2] != s[3] {
		return nil, errors.Errorf("masked softmax: scores shape %v, want (B, H, T, T)", s)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("masked softmax: scale %v must be positive and finite", scale)
	}
	op := maskedSoftmaxOp{
		opBase: opBase{fmt.Sprintf("MaskedSoftmax{causal=%t,keymask=%t,scale=%v}", causal, keyMask != nil, scale)},
		causal: causal, keyMask: keyMask != nil, scale: scale, out: newBuffer(),
	}
	if keyMask == nil {
		return gorgonia.ApplyOp(op, scores) // (B, H, T, T)
	}
	if km := keyMask.Shape(); len(km) != 2 || km[0] != s[0] || km[1] != s[3] {
		return nil, errors.Errorf("masked softmax: key mask shape %v, want (%d, %d)", km, s[0], s[3])
	}
	return gorgonia.ApplyOp(op, scores, keyMask) // (B, H, T, T)
}

type maskedSoftmaxOp struct {
	opBase
	causal, keyMask bool
	scale           float64
	out             *buffer
}

func (op maskedSoftmaxOp) Arity() int {
	if op.keyMask {
		return 2
	}
	return 1
}

func (op maskedSoftmaxOp) Type() hm.Type {
	if op.keyMask {
		return hm.NewFnType(floatTensor(4), floatTensor(2), floatTensor(4))
	}
	return hm.NewFnType(floatTensor(4), floatTensor(4))
}

func (op maskedSoftmaxOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, op.Arity())
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op maskedSoftmaxOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	x, err := denseArg(inputs, 0, 4, "masked softmax")
	if err != nil {
		return nil, err
	}
	args := []*tensor.Dense{x}
	s := x.Shape()
	if s[2] != s[3] {
		return nil, errors.Errorf("masked softmax: scores shape %v, want (B, H, T, T)", s)
	}
	if op.keyMask {
		m, err := denseArg(inputs, 1, 2, "masked softmax")
		if err != nil {
			return nil, err
		}
		if m.Shape()[0] != s[0] || m.Shape()[1] != s[3] {
			return nil, errors.Errorf("masked softmax: key mask shape %v, want (%d, %d)", m.Shape(), s[0], s[3])
		}
		args = append(args, m)
	}
	if err := sameDtype("masked softmax", args...); err != nil {
		return nil, err
	}
	y := op.out.get(x.Dtype(), s...)
	if x.Dtype() == tensor.Float64 {
		maskedSoftmax[float64](op, args, y)
	} else {
		maskedSoftmax[float32](op, args, y)
	}
	return y, nil
}

// maskedSoftmax fills y (every entry: the buffer is reused) row by row, the
// rows spread over the cores.
func maskedSoftmax[T float](op maskedSoftmaxOp, args []*tensor.Dense, y *tensor.Dense) {
	s := args[0].Shape()
	h, t := s[1], s[2]
	xd, yd := args[0].Data().([]T), y.Data().([]T)
	var mask []T
	if len(args) == 2 {
		mask = args[1].Data().([]T)
	}
	kernels.ParallelFor(len(xd)/t, float64(4*t), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i := r % t // query position; r / (h*t) is the batch row
			row, out := xd[r*t:(r+1)*t], yd[r*t:(r+1)*t]
			keys := t
			if op.causal {
				keys = i + 1
			}
			clear(out[keys:])
			if mask != nil {
				bi := r / (h * t)
				softmaxRowMasked(row[:keys], out[:keys], mask[bi*t:bi*t+keys], op.scale)
				continue
			}
			softmaxRow(row[:keys], out[:keys], op.scale)
		}
	})
}

// softmaxRow sets out = softmax(scale * row). float32 rows go through the
// vector exp kernel; the argument scale*(x - max) is formed by subtracting
// first, so it is exact up to one rounding of itself whatever the size of
// the logits. float64 rows use math.Exp.
func softmaxRow[T float](row, out []T, scale float64) {
	if r32, ok := any(row).([]float32); ok {
		o32 := any(out).([]float32)
		sum := kernels.ExpShift(r32, o32, float32(scale), kernels.MaxOf(r32))
		kernels.ScaleBy(o32, 1/sum)
		return
	}
	maxv := row[0]
	for _, v := range row[1:] {
		if v > maxv {
			maxv = v
		}
	}
	var sum float64
	for j, v := range row {
		e := math.Exp(scale * (float64(v) - float64(maxv)))
		out[j] = T(e)
		sum += e
	}
	inv := 1 / sum
	for j := range out {
		out[j] = T(float64(out[j]) * inv)
	}
}

// softmaxRowMasked is softmaxRow over the keys whose mask entry is not 0;
// hidden keys get exactly 0, and a row with every key hidden is all 0.
func softmaxRowMasked[T float](row, out, mask []T, scale float64) {
	maxv := math.Inf(-1)
	for j, v := range row {
		if mask[j] != 0 {
			maxv = math.Max(maxv, float64(v))
		}
	}
	if math.IsInf(maxv, -1) {
		clear(out)
		return
	}
	var sum float64
	for j, v := range row {
		if mask[j] == 0 {
			out[j] = 0
			continue
		}
		e := math.Exp(scale * (float64(v) - maxv))
		out[j] = T(e)
		sum += e
	}
	inv := 1 / sum
	for j := range out {
		out[j] = T(float64(out[j]) * inv)
	}
}

func (op maskedSoftmaxOp) DiffWRT(inputs int) []bool {
	diff := make([]bool, inputs)
	diff[0] = true
	return diff
}

// SymDiff: dx = scale * y * (dy - sum_j y_j dy_j) per row; hidden entries
// have y = 0 and so get no gradient. The key mask is not differentiable.
func (op maskedSoftmaxOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	gop := softmaxGradOp{opBase{fmt.Sprintf("MaskedSoftmaxGrad{causal=%t,scale=%v}", op.causal, op.scale)}, op.causal, op.scale, newBuffer()}
	dx, err := gorgonia.ApplyOp(gop, output, grad) // (B, H, T, T)
	if err != nil {
		return nil, errors.Wrap(err, "masked softmax gradient")
	}
	grads := make(gorgonia.Nodes, len(inputs))
	grads[0] = dx
	return grads, nil
}

// softmaxGradOp maps (y, dy) to scale * y * (dy - rowsum(y * dy)) over the
// last axis. When causal, entries above the diagonal (where y is 0) are set
// to 0 without being computed.
type softmaxGradOp struct {
	opBase
	causal bool
	scale  float64
	out    *buffer
}

func (op softmaxGradOp) Arity() int { return 2 }

func (op softmaxGradOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(4), floatTensor(4), floatTensor(4))
}

func (op softmaxGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(s[1]) {
		return nil, errors.Errorf("masked softmax gradient: y %v and dy %v differ", s[0], s[1])
	}
	return s[0].Clone(), nil
}

func (op softmaxGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	y, err := denseArg(inputs, 0, 4, "masked softmax gradient")
	if err != nil {
		return nil, err
	}
	dy, err := denseArg(inputs, 1, 4, "masked softmax gradient")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("masked softmax gradient", y, dy); err != nil {
		return nil, err
	}
	if !y.Shape().Eq(dy.Shape()) {
		return nil, errors.Errorf("masked softmax gradient: y %v and dy %v differ", y.Shape(), dy.Shape())
	}
	dx := op.out.get(y.Dtype(), y.Shape()...)
	t := y.Shape()[3]
	if y.Dtype() == tensor.Float64 {
		softmaxGrad(y.Float64s(), dy.Float64s(), dx.Float64s(), t, op.causal, op.scale)
	} else {
		softmaxGrad(y.Float32s(), dy.Float32s(), dx.Float32s(), t, op.causal, op.scale)
	}
	return dx, nil
}

// softmaxGrad fills dx row by row (every entry), the rows spread over the
// cores. The row dot product is accumulated in float64, except for float32
// rows, which go through the vector kernels (float32 lanes).
func softmaxGrad[T float](y, dy, dx []T, t int, causal bool, scale float64) {
	kernels.ParallelFor(len(y)/t, float64(2*t), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			keys := t
			if causal {
				keys = r%t + 1
			}
			off := r * t
			yr, dyr, dxr := y[off:off+keys], dy[off:off+keys], dx[off:off+keys]
			clear(dx[off+keys : off+t])
			if y32, ok := any(yr).([]float32); ok {
				kernels.SoftmaxGradRow(y32, any(dyr).([]float32), any(dxr).([]float32), float32(scale))
				continue
			}
			var dot float64
			for j, v := range yr {
				dot += float64(v) * float64(dyr[j])
			}
			d, s := T(dot), T(scale)
			for j, v := range yr {
				dxr[j] = s * v * (dyr[j] - d)
			}
		}
	})
}
