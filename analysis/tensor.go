package analysis

import (
	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// Tensor is an activation read out of a run, row-major in Shape, in the
// model's dtype (Dtype): float32 for a float32 model, and so for BF16 and
// F16 files, which compute in float32; float64 for a float64 one. A cached
// run keeps the graph's own values, never a widened copy. Read them as
// float64 (At, Block, Matrix, Float64s: views of a float64 tensor, widened
// copies of a float32 one), or in their own dtype (Float32s, Float64s).
type Tensor struct {
	Shape []int
	f32   []float32
	f64   []float64
}

// tensorOf is v's values as a Tensor, in v's own memory: a run's kept
// value, which the caller's graph never runs again.
func tensorOf(v *tensor.Dense) (Tensor, error) {
	t := Tensor{Shape: v.Shape().Clone()}
	switch v.Dtype() {
	case tensor.Float32:
		t.f32 = v.Float32s()
	case tensor.Float64:
		t.f64 = v.Float64s()
	default:
		return Tensor{}, errors.Errorf("values of type %v, want float32 or float64", v.Dtype())
	}
	return t, nil
}

// newTensor is a Tensor of dtype and shape holding values, rounded to
// float32 for a float32 dtype.
func newTensor(dtype tensor.Dtype, shape []int, values []float64) Tensor {
	t := Tensor{Shape: shape}
	if dtype == tensor.Float64 {
		t.f64 = values
		return t
	}
	t.f32 = make([]float32, len(values))
	for i, v := range values {
		t.f32[i] = float32(v)
	}
	return t
}

// zeroTensor is a Tensor of dtype and shape holding zeros.
func zeroTensor(dtype tensor.Dtype, shape []int) Tensor {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if dtype == tensor.Float64 {
		return Tensor{Shape: shape, f64: make([]float64, n)}
	}
	return Tensor{Shape: shape, f32: make([]float32, n)}
}

// Dtype is the element type of the values: tensor.Float32 or
// tensor.Float64, the model's.
func (t Tensor) Dtype() tensor.Dtype {
	if t.f64 != nil {
		return tensor.Float64
	}
	return tensor.Float32
}

// Len is the number of values.
func (t Tensor) Len() int { return len(t.f32) + len(t.f64) }

// At is the i-th value, flat in row-major order.
func (t Tensor) At(i int) float64 {
	if t.f64 != nil {
		return t.f64[i]
	}
	return float64(t.f32[i])
}

// Block is the contiguous run of values at the leading indices idx (the
// (T, T) map of Block(b, h) of an attention tensor (B, H, T, T); a
// position's residual vector Block(row) of a stream (B*T, D)), flat: a
// view of a float64 tensor's values, a float64 copy of a float32 one's.
func (t Tensor) Block(idx ...int) []float64 { return t.sub(idx...).Float64s() }

// Matrix is Block(idx...) as rows of the last dimension.
func (t Tensor) Matrix(idx ...int) [][]float64 {
	return Rows(t.Block(idx...), t.Shape[len(t.Shape)-1])
}

// Float64s is every value, flat: the tensor's own slice for a float64
// tensor, a widened copy for a float32 one.
func (t Tensor) Float64s() []float64 {
	if t.f64 != nil {
		return t.f64
	}
	out := make([]float64, len(t.f32))
	for i, x := range t.f32 {
		out[i] = float64(x)
	}
	return out
}

// Float32s is every value, flat: the tensor's own slice for a float32
// tensor, a rounded copy for a float64 one.
func (t Tensor) Float32s() []float32 {
	if t.f64 == nil {
		return t.f32
	}
	out := make([]float32, len(t.f64))
	for i, x := range t.f64 {
		out[i] = float32(x)
	}
	return out
}

// sub is the block at the leading indices idx as a Tensor of the trailing
// dimensions, sharing t's memory.
func (t Tensor) sub(idx ...int) Tensor {
	off, size := 0, t.Len()
	for i, x := range idx {
		size /= t.Shape[i]
		off += x * size
	}
	return t.span(off, off+size, t.Shape[len(idx):])
}

// span is values [lo, hi) of t as a Tensor of shape, sharing t's memory.
func (t Tensor) span(lo, hi int, shape []int) Tensor {
	out := Tensor{Shape: shape}
	if t.f64 != nil {
		out.f64 = t.f64[lo:hi:hi]
	} else {
		out.f32 = t.f32[lo:hi:hi]
	}
	return out
}

// copyFrom copies v's values, of t's dtype and size, into t's memory.
func (t Tensor) copyFrom(v *tensor.Dense) error {
	src, err := tensorOf(v)
	if err != nil {
		return err
	}
	if src.Dtype() != t.Dtype() || src.Len() != t.Len() {
		return errors.Errorf("%d values of type %v, want %d of %v", src.Len(), src.Dtype(), t.Len(), t.Dtype())
	}
	t.copyIn(src)
	return nil
}

// copyIn copies src's values, of t's dtype and size, into t's memory.
func (t Tensor) copyIn(src Tensor) {
	copy(t.f32, src.f32)
	copy(t.f64, src.f64)
}

// dense is t as a gorgonia tensor of t's shape, sharing its memory.
func (t Tensor) dense() *tensor.Dense {
	if t.f64 != nil {
		return tensor.New(tensor.WithShape(t.Shape...), tensor.WithBacking(t.f64))
	}
	return tensor.New(tensor.WithShape(t.Shape...), tensor.WithBacking(t.f32))
}

// firstNonFinite is the index of the first NaN or infinity, or -1.
func (t Tensor) firstNonFinite() int {
	if t.f64 != nil {
		return model.FirstNonFinite(t.f64)
	}
	return model.FirstNonFinite(t.f32)
}
