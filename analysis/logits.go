package analysis

import (
	"slices"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// Logits are the logits a run kept, (rows, V), a Tensor in the model's
// dtype like every activation: a float32 model's are widened row by row as
// they are read (Row, At, Matrix), where a float64 copy of them all would
// be the largest thing an inspection holds (98 MB at GPT-2 small's size
// over 256 tokens, 50257 logits a position).
type Logits struct{ Tensor }

// logitsOf is the logits value of a run, kept as it is: v's own memory,
// which the caller's graph never runs again.
func logitsOf(v *tensor.Dense) (Logits, error) {
	t, err := tensorOf(v)
	return Logits{t}, err
}

// width is V, the logits in a row.
func (l Logits) width() int { return l.Shape[len(l.Shape)-1] }

// Row is row i: a view for a float64 model, a float64 copy for a float32 one.
func (l Logits) Row(i int) []float64 { return l.Block(i) }

// Float32Rows is every row as float32: views of a float32 model's own
// logits, rounded copies of a float64 model's.
func (l Logits) Float32Rows() [][]float32 {
	out := make([][]float32, l.Shape[0])
	for i := range out {
		out[i] = l.sub(i).Float32s()
	}
	return out
}

// rows is rows [lo, hi) of l, sharing its memory.
func (l Logits) rows(lo, hi int) Logits {
	v := l.width()
	return Logits{l.span(lo*v, hi*v, []int{hi - lo, v})}
}

// Own is l in memory of its own: rows of a batch's logits (a view, as
// Cache.Pass gives) kept past the run would keep every row alive.
func (l Logits) Own() Logits {
	return Logits{Tensor{Shape: slices.Clone(l.Shape), f32: slices.Clone(l.f32), f64: slices.Clone(l.f64)}}
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
