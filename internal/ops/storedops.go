package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// LinearStored is Linear with the weight w held in its file's dtype
// (Stored): x (N, in) float32, b (out) float32 or nil. Each part of w is
// multiplied in place by kernels.GemmHalf into its columns of y: GemmHalf
// gives Gemm's bits over the weight widened, and every element of a GEMM
// is the same chain of operations whatever the columns beside it
// (internal/kernels), so the result is Linear's on the same weight
// widened, bit for bit, on every kernel path
// (TestLinearStoredIsLinearWidened). A fault reading the mapping, on the
// caller or on a kernel's helper goroutine, is an error (ReadMapped).
// Forward only: a stored weight is not trained.
func LinearStored(x *gorgonia.Node, w *Stored, b *gorgonia.Node) (*gorgonia.Node, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	d := linearStoredDef{w: w, halves: w.halves(), bias: b != nil}
	if b == nil {
		return apply(d, x) // (N, out)
	}
	return apply(d, x, b) // (N, out)
}

type linearStoredDef struct {
	w      *Stored
	halves [][]uint16 // each part's elements
	bias   bool
}

func (d linearStoredDef) String() string {
	return fmt.Sprintf("LinearStored{%s,bias=%t}", d.w.identity(), d.bias)
}

func (d linearStoredDef) outDtype() tensor.Dtype { return tensor.Float32 }

func (d linearStoredDef) signature() signature {
	in := []input{floatIn(2, false)}
	if d.bias {
		in = append(in, floatIn(1, false))
	}
	return signature{in: in, out: 2}
}

func (d linearStoredDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if s[0][1] != d.w.Cols {
		return nil, errors.Errorf("linear: x %v and weight %s (%d, %d) do not match", s[0], d.w.Name, d.w.Rows, d.w.Cols)
	}
	if d.bias && s[1][0] != d.w.Rows {
		return nil, errors.Errorf("linear: bias %v does not match weight %s (%d, %d)", s[1], d.w.Name, d.w.Rows, d.w.Cols)
	}
	return tensor.Shape{s[0][0], d.w.Rows}, nil
}

func (d linearStoredDef) run(a *args) error {
	if a.in[0].Dtype() != tensor.Float32 {
		return errors.Errorf("%v: x holds %v; a stored weight multiplies float32", d, a.in[0].Dtype())
	}
	x, y := data[float32](a, 0), out[float32](a)
	n, in, o := a.in[0].Shape()[0], d.w.Cols, d.w.Rows
	var beta float32
	if d.bias {
		b := data[float32](a, 1)
		for i := 0; i < n; i++ {
			copy(y[i*o:(i+1)*o], b)
		}
		beta = 1
	}
	h, row := d.w.half(), 0
	for i, p := range d.w.Parts {
		err := ReadMapped(d.w.Name, p.File, func() {
			kernels.GemmHalf(h, false, true, n, p.Rows, in, x, in, d.halves[i], in, beta, y[row:], o) // columns [row, row+p.Rows) of (N, out)
		})
		if err != nil {
			return err
		}
		row += p.Rows
	}
	return nil
}

// EmbeddingStored is Embedding of a table held in its file's dtype
// (Stored): each id's row widened into (N, D) float32; an id outside
// [0, V) fails the run naming its position. Forward only.
func EmbeddingStored(table *Stored, ids *gorgonia.Node) (*gorgonia.Node, error) {
	if err := table.Check(); err != nil {
		return nil, err
	}
	if ids.Dims() != 1 || ids.Dtype() != tensor.Int {
		return nil, errors.Errorf("embedding: ids %v of %v, want an Int vector", ids.Shape(), ids.Dtype())
	}
	return apply(embeddingStoredDef{table: table}, ids) // (N, D)
}

type embeddingStoredDef struct{ table *Stored }

func (e embeddingStoredDef) String() string {
	return fmt.Sprintf("EmbeddingStored{%s}", e.table.identity())
}

func (e embeddingStoredDef) outDtype() tensor.Dtype { return tensor.Float32 }

func (e embeddingStoredDef) signature() signature {
	return signature{in: []input{intsIn}, out: 2}
}

func (e embeddingStoredDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{s[0][0], e.table.Cols}, nil
}

func (e embeddingStoredDef) run(a *args) error {
	vocab, d, y := e.table.Rows, e.table.Cols, out[float32](a)
	for n, id := range a.ids {
		if id < 0 || id >= vocab {
			return errors.Errorf("embedding: id %d at position %d is outside [0, %d)", id, n, vocab)
		}
		if err := e.table.WidenRows(y[n*d:(n+1)*d], id, id+1); err != nil {
			return err
		}
	}
	return nil
}

// StoredOf is the stored weight g reads (LinearStored's, EmbeddingStored's
// table), or nil for any other op: for a graph's summary, which counts a
// parameter at the op that reads it.
func StoredOf(g gorgonia.Op) *Stored {
	o, ok := g.(op)
	if !ok {
		return nil
	}
	switch d := o.def.(type) {
	case linearStoredDef:
		return d.w
	case embeddingStoredDef:
		return d.table
	}
	return nil
}
