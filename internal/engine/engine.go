package engine

import (
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Engine is gorgonia.StandardEngine with faster Transpose, Repeat, float32
// arithmetic and MatMul (see the package doc). The zero value is ready to
// use.
type Engine struct{ gorgonia.StandardEngine }

var (
	_ tensor.Transposer = Engine{}
	_ tensor.Repeater   = Engine{}
)

// maxDims is the most axes the fast Transpose takes (Gorgonia's ops here
// use at most 5).
const maxDims = 8

// Set is a tensor.ConsOpt that gives a tensor this engine.
var Set = tensor.WithEngine(Engine{})

// Transpose moves a's data into the order of its current shape: a is a
// transposed view (tensor's Dense.Transpose calls this with the view's
// shape and the strides it reads its memory with), expStrides the
// row-major strides its data will have.
func (e Engine) Transpose(a tensor.Tensor, expStrides []int) error {
	d, ok := a.(*tensor.Dense)
	if !ok || !d.IsNativelyAccessible() || d.Dims() > maxDims || !isRowMajor(d.Shape(), expStrides) {
		return e.StandardEngine.Transpose(a, expStrides)
	}
	shape, strides := d.Shape(), d.Strides()
	switch d.Dtype() {
	case tensor.Float32:
		data := d.Float32s()
		tmp := kernels.Scratch(len(data))
		defer kernels.PutScratch(tmp)
		gather(*tmp, data, shape, strides)
		copy(data, *tmp)
	case tensor.Float64:
		data := d.Float64s()
		tmp := make([]float64, len(data))
		gather(tmp, data, shape, strides)
		copy(data, tmp)
	default:
		return e.StandardEngine.Transpose(a, expStrides)
	}
	return nil
}

// Repeat is tensor.Repeat: the elements of t along axis, each repeats[0]
// times, into a new tensor of this engine.
func (e Engine) Repeat(t tensor.Tensor, axis int, repeats ...int) (tensor.Tensor, error) {
	outer, n, inner, r, newShape, ok := repeatPlan(t, axis, repeats)
	if !ok {
		return e.StandardEngine.Repeat(t, axis, repeats...)
	}
	out := tensor.New(tensor.Of(t.Dtype()), tensor.WithShape(newShape...), Set)
	repeatInto(out, t.(*tensor.Dense), outer, n, inner, r)
	return out, nil
}

// RepeatReuse is Repeat into reuse, which must have the repeated shape.
func (e Engine) RepeatReuse(t, reuse tensor.Tensor, axis int, repeats ...int) (tensor.Tensor, error) {
	outer, n, inner, r, newShape, ok := repeatPlan(t, axis, repeats)
	out, isDense := reuse.(*tensor.Dense)
	if !ok || !isDense || out.Dtype() != t.Dtype() || !out.Shape().Eq(newShape) || !contiguous(out) {
		return e.StandardEngine.RepeatReuse(t, reuse, axis, repeats...)
	}
	repeatInto(out, t.(*tensor.Dense), outer, n, inner, r)
	return out, nil
}

// repeatPlan says whether Repeat takes the fast loop for t, and its sizes:
// t is outer x n x inner around axis (of length n), and each inner block
// is written r times in a row, giving newShape.
func repeatPlan(t tensor.Tensor, axis int, repeats []int) (outer, n, inner, r int, newShape tensor.Shape, ok bool) {
	d, isDense := t.(*tensor.Dense)
	if !isDense || len(repeats) != 1 || repeats[0] < 1 || !contiguous(d) {
		return 0, 0, 0, 0, nil, false
	}
	if dt := d.Dtype(); dt != tensor.Float32 && dt != tensor.Float64 {
		return 0, 0, 0, 0, nil, false
	}
	shape := d.Shape()
	if axis < 0 || axis >= len(shape) || shape.IsScalar() {
		return 0, 0, 0, 0, nil, false
	}
	newShape, _, _, err := shape.Repeat(axis, repeats...)
	if err != nil || len(newShape) != len(shape) {
		return 0, 0, 0, 0, nil, false
	}
	outer, n, inner, r = 1, shape[axis], 1, repeats[0]
	for i, s := range shape {
		switch {
		case i < axis:
			outer *= s
		case i > axis:
			inner *= s
		}
		want := s
		if i == axis {
			want = s * r
		}
		if newShape[i] != want {
			return 0, 0, 0, 0, nil, false
		}
	}
	return outer, n, inner, r, newShape, true
}

// repeatInto writes src's inner blocks, each r times, into dst.
func repeatInto(dst, src *tensor.Dense, outer, n, inner, r int) {
	if src.Dtype() == tensor.Float32 {
		repeatBlocks(dst.Float32s(), src.Float32s(), outer*n, inner, r)
	} else {
		repeatBlocks(dst.Float64s(), src.Float64s(), outer*n, inner, r)
	}
}

// repeatBlocks writes each of src's blocks of inner values r times in a row
// into dst.
func repeatBlocks[T float32 | float64](dst, src []T, blocks, inner, r int) {
	if inner == 1 {
		for i, v := range src[:blocks] {
			row := dst[i*r : (i+1)*r]
			for j := range row {
				row[j] = v
			}
		}
		return
	}
	for i := range blocks {
		block := src[i*inner : (i+1)*inner]
		for j := range r {
			copy(dst[(i*r+j)*inner:], block)
		}
	}
}

// gather writes src read through shape and strides into dst in row-major
// order, the last axis a run at a time.
func gather[T float32 | float64](dst, src []T, shape, strides []int) {
	last := len(shape) - 1
	run, step := shape[last], strides[last]
	rows := 1
	for _, s := range shape[:last] {
		rows *= s
	}
	var idx [maxDims]int
	from := 0
	for o := 0; o < rows*run; o += run {
		if step == 1 {
			copy(dst[o:o+run], src[from:from+run])
		} else {
			for j := range run {
				dst[o+j] = src[from+j*step]
			}
		}
		for k := last - 1; k >= 0; k-- { // next row: odometer over the outer axes
			idx[k]++
			from += strides[k]
			if idx[k] < shape[k] {
				break
			}
			from -= strides[k] * shape[k]
			idx[k] = 0
		}
	}
}

// isRowMajor says whether strides are shape's row-major strides.
func isRowMajor(shape tensor.Shape, strides []int) bool {
	if len(strides) != len(shape) || len(shape) == 0 {
		return false
	}
	want := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] > 1 && strides[i] != want {
			return false
		}
		want *= shape[i]
	}
	return true
}

// contiguous says whether d is its own row-major memory: no view, no
// transpose pending.
func contiguous(d *tensor.Dense) bool {
	return d.IsNativelyAccessible() && !d.IsMaterializable() && d.DataOrder().IsRowMajor() && isRowMajor(d.Shape(), d.Strides())
}
