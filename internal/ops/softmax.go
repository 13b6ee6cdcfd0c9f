package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// MaskedSoftmax returns softmax over the last axis of scale*scores for
// attention scores (B, H, T, T) (rows = queries, columns = keys). When
// causal, query i sees only keys j <= i; when keyMask (B, T) is non-nil,
// keys whose mask entry is 0 are hidden. Hidden entries are exactly 0, each
// row's max is its own (so logits of any size are safe), and a row with
// every key hidden is all zeros rather than NaN.
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
	d := softmaxDef{causal: causal, keyMask: keyMask != nil, scale: scale}
	if keyMask == nil {
		return apply(d, scores) // (B, H, T, T)
	}
	if km := keyMask.Shape(); len(km) != 2 || km[0] != s[0] || km[1] != s[3] {
		return nil, errors.Errorf("masked softmax: key mask shape %v, want (%d, %d)", km, s[0], s[3])
	}
	return apply(d, scores, keyMask) // (B, H, T, T)
}

// softmaxDef is the masked softmax or, when backward, its gradient
// (y, dy) -> scale * y * (dy - rowsum(y * dy)) over the last axis; hidden
// entries have y = 0 and so get no gradient. When causal, entries above the
// diagonal are set to 0 without being computed.
type softmaxDef struct {
	backward, causal, keyMask bool
	scale                     float64
}

func (d softmaxDef) String() string {
	if d.backward {
		return fmt.Sprintf("MaskedSoftmaxGrad{causal=%t,scale=%v}", d.causal, d.scale)
	}
	return fmt.Sprintf("MaskedSoftmax{causal=%t,keymask=%t,scale=%v}", d.causal, d.keyMask, d.scale)
}

func (d softmaxDef) signature() signature {
	switch {
	case d.backward:
		return signature{in: []input{floatIn(4, false), floatIn(4, false)}, out: 4}
	case d.keyMask:
		return signature{in: []input{floatIn(4, true), floatIn(2, false)}, out: 4}
	}
	return signature{in: []input{floatIn(4, true)}, out: 4}
}

func (d softmaxDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	x := s[0]
	switch {
	case x[2] != x[3]:
		return nil, errors.Errorf("%v: shape %v, want (B, H, T, T)", d, x)
	case d.backward:
		return same(d.String(), s...)
	case d.keyMask && !s[1].Eq(tensor.Shape{x[0], x[3]}):
		return nil, errors.Errorf("%v: key mask shape %v, want (%d, %d)", d, s[1], x[0], x[3])
	}
	return x.Clone(), nil
}

func (d softmaxDef) run(a *args) error {
	if d.backward {
		return byDtype(d, a, softmaxGrad[float64], softmaxGrad[float32])
	}
	return byDtype(d, a, maskedSoftmax[float64], maskedSoftmax[float32])
}

// maskedSoftmax fills the output (every entry: the buffer is reused) row by
// row, the rows spread over the cores.
func maskedSoftmax[T float](d softmaxDef, a *args) {
	s := a.in[0].Shape()
	h, t := s[1], s[2]
	x, y := data[T](a, 0), out[T](a)
	var mask []T
	if d.keyMask {
		mask = data[T](a, 1)
	}
	kernels.ParallelFor(len(x)/max(t, 1), float64(4*t), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			i := r % t // query position; r / (h*t) is the batch row
			row, out := x[r*t:(r+1)*t], y[r*t:(r+1)*t]
			keys := t
			if d.causal {
				keys = i + 1
			}
			clear(out[keys:])
			if mask != nil {
				bi := r / (h * t)
				softmaxRowMasked(row[:keys], out[:keys], mask[bi*t:bi*t+keys], d.scale)
				continue
			}
			softmaxRow(row[:keys], out[:keys], d.scale)
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
	maxv := rowMax(row)
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

// rowMax is the largest entry of a non-empty row.
func rowMax[T float](row []T) T {
	m := row[0]
	for _, v := range row[1:] {
		if v > m {
			m = v
		}
	}
	return m
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

// softmaxGrad fills dx row by row (every entry), the rows spread over the
// cores. The row dot product is accumulated in float64, except for float32
// rows, which go through the vector kernels (float32 lanes).
func softmaxGrad[T float](d softmaxDef, a *args) {
	y, dy, dx := data[T](a, 0), data[T](a, 1), out[T](a)
	t := a.in[0].Shape()[3]
	kernels.ParallelFor(len(y)/max(t, 1), float64(2*t), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			keys := t
			if d.causal {
				keys = r%t + 1
			}
			off := r * t
			yr, dyr, dxr := y[off:off+keys], dy[off:off+keys], dx[off:off+keys]
			clear(dx[off+keys : off+t])
			if y32, ok := any(yr).([]float32); ok {
				kernels.SoftmaxGradRow(y32, any(dyr).([]float32), any(dxr).([]float32), float32(d.scale))
				continue
			}
			var dot float64
			for j, v := range yr {
				dot += float64(v) * float64(dyr[j])
			}
			dt, s := T(dot), T(d.scale)
			for j, v := range yr {
				dxr[j] = s * v * (dyr[j] - dt)
			}
		}
	})
}

// grad: from the output y and dy; the key mask is not differentiable.
func (d softmaxDef) grad(in gorgonia.Nodes, y, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.backward {
		return nil, errors.New("no second derivative")
	}
	dx, err := apply(softmaxDef{backward: true, causal: d.causal, scale: d.scale}, y, dy) // (B, H, T, T)
	grads := make(gorgonia.Nodes, len(in))
	grads[0] = dx
	return grads, err
}
