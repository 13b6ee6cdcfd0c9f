package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Embedding maps Int ids (N) to rows (N, D) of table (V, D), as
// gorgonia.ByIndices(table, ids, 0) would, but into a reused buffer with
// plain row copies, and with a gradient that scatter-adds rows into a
// reused (V, D) buffer instead of one AddSliced call per id. An id outside
// [0, V) fails the run naming its position (ByIndices would silently return
// row 0).
func Embedding(table, ids *gorgonia.Node) (*gorgonia.Node, error) {
	ts := table.Shape()
	if len(ts) != 2 {
		return nil, errors.Errorf("embedding: table %v, want a (V, D) matrix", ts)
	}
	if ids.Dims() != 1 || ids.Dtype() != tensor.Int {
		return nil, errors.Errorf("embedding: ids %v of %v, want an Int vector", ids.Shape(), ids.Dtype())
	}
	return apply(embeddingDef{vocab: ts[0], d: ts[1]}, table, ids) // (N, D)
}

// embeddingDef gathers rows of a (V, D) table by Int ids or, when
// backward, maps (ids (N), dy (N, D)) to the table's gradient (V, D): row v
// is the sum of dy's rows whose id is v (repeated ids accumulate).
type embeddingDef struct {
	vocab, d int
	backward bool
}

func (e embeddingDef) String() string {
	if e.backward {
		return fmt.Sprintf("EmbeddingGrad{V=%d,D=%d}", e.vocab, e.d)
	}
	return fmt.Sprintf("Embedding{V=%d,D=%d}", e.vocab, e.d)
}

func (e embeddingDef) signature() signature {
	if e.backward {
		return signature{in: []input{intsIn, floatIn(2, false)}, out: 2}
	}
	return signature{in: []input{floatIn(2, true), intsIn}, out: 2}
}

func (e embeddingDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if e.backward {
		if !s[1].Eq(tensor.Shape{s[0][0], e.d}) {
			return nil, errors.Errorf("%v: ids %v and dy %v, want (N) and (N, %d)", e, s[0], s[1], e.d)
		}
		return tensor.Shape{e.vocab, e.d}, nil
	}
	if !s[0].Eq(tensor.Shape{e.vocab, e.d}) {
		return nil, errors.Errorf("%v: table %v, want (%d, %d)", e, s[0], e.vocab, e.d)
	}
	return tensor.Shape{s[1][0], e.d}, nil
}

func (e embeddingDef) run(a *args) error {
	for n, id := range a.ids {
		if id < 0 || id >= e.vocab {
			return errors.Errorf("embedding: id %d at position %d is outside [0, %d)", id, n, e.vocab)
		}
	}
	return byDtype(e, a, embedding[float64], embedding[float32])
}

func embedding[T float](e embeddingDef, a *args) {
	d, y := e.d, out[T](a)
	if e.backward {
		dy := data[T](a, 1)
		clear(y)
		for n, id := range a.ids {
			dst, src := y[id*d:(id+1)*d], dy[n*d:(n+1)*d]
			for j, v := range src {
				dst[j] += v
			}
		}
		return
	}
	table := data[T](a, 0)
	for n, id := range a.ids {
		copy(y[n*d:(n+1)*d], table[id*d:(id+1)*d])
	}
}

func (e embeddingDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if e.backward {
		return nil, errors.New("no second derivative")
	}
	e.backward = true
	dt, err := apply(e, in[1], dy) // (V, D)
	return gorgonia.Nodes{dt, nil}, err
}
