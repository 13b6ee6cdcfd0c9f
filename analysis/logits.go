package analysis

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// Logits are the logits a run kept, (rows, V), in the model's dtype: a
// float32 model's stay float32 and are widened row by row as they are read,
// where a float64 copy of them all would be the largest thing an inspection
// holds (98 MB at GPT-2 small's size over 256 tokens, 50257 logits a
// position). Read them through Row, At or Matrix.
type Logits struct {
	Shape []int // (rows, V)
	f32   []float32
	f64   []float64
}

// logitsOf is the logits value of a run, kept as it is: v's own memory,
// which the caller's graph never runs again.
func logitsOf(v *tensor.Dense) (Logits, error) {
	l := Logits{Shape: v.Shape().Clone()}
	switch v.Dtype() {
	case tensor.Float32:
		l.f32 = v.Float32s()
	case tensor.Float64:
		l.f64 = v.Float64s()
	default:
		return Logits{}, errors.Errorf("logits of type %v, want float32 or float64", v.Dtype())
	}
	return l, nil
}

// width is V, the logits in a row.
func (l Logits) width() int { return l.Shape[len(l.Shape)-1] }

// At is the i-th logit, flat in row-major order.
func (l Logits) At(i int) float64 {
	if l.f32 != nil {
		return float64(l.f32[i])
	}
	return l.f64[i]
}

// Row is row i: a view for a float64 model, a float64 copy for a float32 one.
func (l Logits) Row(i int) []float64 {
	v := l.width()
	if l.f32 == nil {
		return l.f64[i*v : (i+1)*v : (i+1)*v]
	}
	out := make([]float64, v)
	for k, x := range l.f32[i*v : (i+1)*v] {
		out[k] = float64(x)
	}
	return out
}

// Matrix is every row (float64 copies for a float32 model).
func (l Logits) Matrix() [][]float64 { return Rows(l.Float64s(), l.width()) }

// Float32Rows is every row as float32: views of a float32 model's own
// logits, rounded copies of a float64 model's.
func (l Logits) Float32Rows() [][]float32 {
	v := l.width()
	out := make([][]float32, l.Shape[0])
	for i := range out {
		if l.f32 != nil {
			out[i] = l.f32[i*v : (i+1)*v : (i+1)*v]
			continue
		}
		out[i] = make([]float32, v)
		for k, x := range l.f64[i*v : (i+1)*v] {
			out[i][k] = float32(x)
		}
	}
	return out
}

// Float64s is every logit, flat: the model's own slice for a float64
// model, a copy for a float32 one.
func (l Logits) Float64s() []float64 {
	if l.f32 == nil {
		return l.f64
	}
	out := make([]float64, len(l.f32))
	for i, x := range l.f32 {
		out[i] = float64(x)
	}
	return out
}

// rows is rows [lo, hi) of l, sharing its memory.
func (l Logits) rows(lo, hi int) Logits {
	v := l.width()
	out := Logits{Shape: []int{hi - lo, v}}
	if l.f32 != nil {
		out.f32 = l.f32[lo*v : hi*v : hi*v]
	} else {
		out.f64 = l.f64[lo*v : hi*v : hi*v]
	}
	return out
}

// Own is l in memory of its own: rows of a batch's logits (a view, as
// Cache.Pass gives) kept past the run would keep every row alive.
func (l Logits) Own() Logits {
	return Logits{Shape: slices.Clone(l.Shape), f32: slices.Clone(l.f32), f64: slices.Clone(l.f64)}
}

// predictions is each row's argmax (the first on a tie), read in the
// logits' own dtype: widening keeps the order of every pair.
func (l Logits) predictions() []int {
	v, n := l.width(), l.Shape[0]
	out := make([]int, n)
	for i := range out {
		if l.f32 != nil {
			out[i] = model.Argmax(l.f32[i*v : (i+1)*v])
		} else {
			out[i] = model.Argmax(l.f64[i*v : (i+1)*v])
		}
	}
	return out
}

// check refuses logits holding a NaN or an infinity (model.CheckLogits),
// in their own dtype.
func (l Logits) check(m *model.Model, position func(row int) int) error {
	if l.f32 != nil {
		return model.CheckLogits(m, l.f32, position)
	}
	return model.CheckLogits(m, l.f64, position)
}
