package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Mask says which keys each query of MaskedSoftmax sees and what is added
// to their scores. The zero Mask lets every query see every key.
type Mask struct {
	Causal bool // query i sees only keys j <= i
	// Window > 0 narrows each query to the keys within Window positions of
	// it: with Causal, its last Window keys, itself included (j > i-Window);
	// without, keys with |i-j| < Window.
	Window int
	// Slopes, one per head when not nil, add ALiBi's linear bias
	// -Slopes[h]*|i-j| to the scaled score of query i and key j (Press et
	// al. 2022; with Causal, |i-j| = i-j).
	Slopes []float64
}

// String names every setting that changes the result; a window and slopes
// only when set, so the plain mask reads "causal=true".
func (m Mask) String() string {
	s := fmt.Sprintf("causal=%t", m.Causal)
	if m.Window > 0 {
		s += fmt.Sprintf(",window=%d", m.Window)
	}
	if m.Slopes != nil {
		s += fmt.Sprintf(",alibi=%v", m.Slopes)
	}
	return s
}

// keys is the range [lo, hi) of keys query i of a row of t may see.
func (m Mask) keys(i, t int) (lo, hi int) {
	lo, hi = 0, t
	if m.Causal {
		hi = i + 1
	}
	if m.Window > 0 {
		lo = max(0, i-m.Window+1)
		if !m.Causal {
			hi = min(t, i+m.Window)
		}
	}
	return lo, hi
}

// MaskedSoftmax returns softmax over the last axis of scale*scores (plus
// ALiBi's bias when mask has slopes) for attention scores (B, H, T, T)
// (rows = queries, columns = keys). mask says which keys each query sees;
// when keyMask (B, T) is non-nil, keys whose mask entry is 0 are hidden too.
// Hidden entries are exactly 0, each row's max is its own (so logits of any
// size are safe), and a row with every key hidden is all zeros rather than
// NaN.
//
// It replaces gorgonia.SoftMax, whose last-axis kernel subtracts the
// tensor's first element instead of each row's max (see docs/gorgonia.md).
func MaskedSoftmax(scores, keyMask *gorgonia.Node, mask Mask, scale float64) (*gorgonia.Node, error) {
	s := scores.Shape()
	if len(s) != 4 || s[2] != s[3] {
		return nil, errors.Errorf("masked softmax: scores shape %v, want (B, H, T, T)", s)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("masked softmax: scale %v must be positive and finite", scale)
	}
	if mask.Window < 0 {
		return nil, errors.Errorf("masked softmax: window %d must not be negative", mask.Window)
	}
	if mask.Slopes != nil && len(mask.Slopes) != s[1] {
		return nil, errors.Errorf("masked softmax: %d ALiBi slopes for %d heads", len(mask.Slopes), s[1])
	}
	d := softmaxDef{mask: mask, keyMask: keyMask != nil, scale: scale}
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
// entries have y = 0 and so get no gradient (ALiBi's bias is a constant:
// it changes y, not this formula). Entries outside a query's key range
// (Mask.keys) are set to 0 without being computed.
type softmaxDef struct {
	backward, keyMask bool
	mask              Mask
	scale             float64
}

func (d softmaxDef) String() string {
	if d.backward {
		return fmt.Sprintf("MaskedSoftmaxGrad{%v,scale=%v}", d.mask, d.scale)
	}
	return fmt.Sprintf("MaskedSoftmax{%v,keymask=%t,scale=%v}", d.mask, d.keyMask, d.scale)
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
			i := r % t // query position; r / (h*t) is the batch row, r / t % h the head
			row, out := x[r*t:(r+1)*t], y[r*t:(r+1)*t]
			first, end := d.mask.keys(i, t)
			clear(out[:first])
			clear(out[end:])
			row, out = row[first:end], out[first:end]
			var keep []T
			if mask != nil {
				bi := r / (h * t)
				keep = mask[bi*t+first : bi*t+end]
			}
			switch {
			case d.mask.Slopes != nil:
				softmaxRowBiased(row, out, keep, d.scale, d.mask.Slopes[r/t%h], i-first)
			case keep != nil:
				softmaxRowMasked(row, out, keep, d.scale)
			default:
				softmaxRow(row, out, d.scale)
			}
		}
	})
}

// softmaxRowBiased is softmaxRowMasked (keep may be nil: every key kept)
// with ALiBi's bias: key j of the row, at distance |at-j| from the query,
// scores scale*row[j] - slope*|at-j|. float32 rows go through the vector
// exp kernel; float64 rows use math.Exp.
func softmaxRowBiased[T float](row, out, keep []T, scale, slope float64, at int) {
	if r32, ok := any(row).([]float32); ok {
		softmaxRowBiased32(r32, any(out).([]float32), any(keep).([]float32), float32(scale), float32(slope), at)
		return
	}
	maxv := math.Inf(-1)
	for j, v := range row {
		if keep == nil || keep[j] != 0 {
			z := scale*float64(v) - slope*math.Abs(float64(at-j))
			maxv = math.Max(maxv, z)
		}
	}
	if math.IsInf(maxv, -1) {
		clear(out)
		return
	}
	var sum float64
	for j, v := range row {
		if keep != nil && keep[j] == 0 {
			out[j] = 0
			continue
		}
		e := math.Exp(scale*float64(v) - slope*math.Abs(float64(at-j)) - maxv)
		out[j] = T(e)
		sum += e
	}
	inv := 1 / sum
	for j := range out {
		out[j] = T(float64(out[j]) * inv)
	}
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

// softmaxRowBiased32 is softmaxRowBiased for float32: the biased scores go
// into out, then the vector kernel exponentiates them in place; hidden keys
// are set to exactly 0 afterwards.
func softmaxRowBiased32(row, out, keep []float32, scale, slope float32, at int) {
	maxv := float32(math.Inf(-1))
	for j, v := range row {
		out[j] = scale*v - slope*float32(max(at-j, j-at))
		if keep == nil || keep[j] != 0 {
			maxv = max(maxv, out[j])
		}
	}
	if math.IsInf(float64(maxv), -1) {
		clear(out)
		return
	}
	var hidden float32
	for j := range out {
		if keep != nil && keep[j] == 0 {
			out[j] = maxv - 1e4 // exp underflows: not counted, zeroed below
		}
	}
	sum := kernels.ExpShift(out, out, 1, maxv)
	for j := range out {
		if keep != nil && keep[j] == 0 {
			hidden += out[j]
			out[j] = 0
		}
	}
	kernels.ScaleBy(out, 1/(sum-hidden))
}

// softmaxGrad fills dx row by row (every entry), the rows spread over the
// cores. The row dot product is accumulated in float64, except for float32
// rows, which go through the vector kernels (float32 lanes).
func softmaxGrad[T float](d softmaxDef, a *args) {
	y, dy, dx := data[T](a, 0), data[T](a, 1), out[T](a)
	t := a.in[0].Shape()[3]
	kernels.ParallelFor(len(y)/max(t, 1), float64(2*t), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			first, end := d.mask.keys(r%t, t)
			off := r * t
			clear(dx[off : off+first])
			clear(dx[off+end : off+t])
			yr, dyr, dxr := y[off+first:off+end], dy[off+first:off+end], dx[off+first:off+end]
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
	dx, err := apply(softmaxDef{backward: true, mask: Mask{Causal: d.mask.Causal, Window: d.mask.Window}, scale: d.scale}, y, dy) // (B, H, T, T)
	grads := make(gorgonia.Nodes, len(in))
	grads[0] = dx
	return grads, err
}
