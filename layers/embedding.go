package layers

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Embedding looks rows of Table (V, D) up by id, as PyTorch's nn.Embedding.
type Embedding struct {
	Vocab, D int
	Table    *gorgonia.Node // (V, D)
	Path     Path           // which ops Forward writes; "" is Fused
}

// NewEmbedding checks the table is a matrix.
func NewEmbedding(table *gorgonia.Node) (*Embedding, error) {
	if table == nil || table.Dims() != 2 {
		return nil, errors.Errorf("embedding table %v: want a (V, D) matrix", nodeShape(table))
	}
	return &Embedding{Vocab: table.Shape()[0], D: table.Shape()[1], Table: table}, nil
}

// Forward maps Int ids (N) to rows (N, D), as gorgonia.ByIndices(table,
// ids, 0) would, but into a reused buffer with plain row copies, and with a
// gradient that scatter-adds rows into a reused (V, D) buffer instead of one
// AddSliced call per id. An id outside [0, V) fails the run naming its
// position (ByIndices would silently return row 0).
func (e *Embedding) Forward(ids *gorgonia.Node) (*gorgonia.Node, error) {
	if ids.Dims() != 1 || ids.Dtype() != tensor.Int {
		return nil, errors.Errorf("embedding %s: ids %v of %v, want an Int vector", e.Table.Name(), ids.Shape(), ids.Dtype())
	}
	if e.Path == Gorgonia {
		return e.forwardGorgonia(ids)
	}
	op := embeddingOp{opBase{fmt.Sprintf("Embedding{V=%d,D=%d}", e.Vocab, e.D)}, e.Vocab, e.D, newBuffer()}
	return NameAs(prefixOf(e.Table))(gorgonia.ApplyOp(op, e.Table, ids)) // (N, D)
}

// embeddingOp gathers rows of a (V, D) table by Int ids.
type embeddingOp struct {
	opBase
	vocab, d int
	out      *buffer
}

func (op embeddingOp) Arity() int { return 2 }

func (op embeddingOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(2), intVector(), floatTensor(2))
}

func (op embeddingOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(tensor.Shape{op.vocab, op.d}) || len(s[1]) != 1 {
		return nil, errors.Errorf("embedding: table %v and ids %v, want (%d, %d) and (N)", s[0], s[1], op.vocab, op.d)
	}
	return tensor.Shape{s[1][0], op.d}, nil
}

// embeddingIDs checks ids (input i) against the vocabulary.
func embeddingIDs(inputs []gorgonia.Value, i, vocab int) ([]int, error) {
	t, err := denseArg(inputs, i, 1, "embedding")
	if err != nil {
		return nil, err
	}
	if t.Dtype() != tensor.Int {
		return nil, errors.Errorf("embedding: ids of %v, want Int", t.Dtype())
	}
	ids := t.Ints()
	for n, id := range ids {
		if id < 0 || id >= vocab {
			return nil, errors.Errorf("embedding: id %d at position %d is outside [0, %d)", id, n, vocab)
		}
	}
	return ids, nil
}

func (op embeddingOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	table, err := denseArg(inputs, 0, 2, "embedding")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("embedding", table); err != nil {
		return nil, err
	}
	ids, err := embeddingIDs(inputs, 1, op.vocab)
	if err != nil {
		return nil, err
	}
	y := op.out.get(table.Dtype(), len(ids), op.d)
	if table.Dtype() == tensor.Float64 {
		gatherRows(table.Float64s(), ids, y.Float64s(), op.d)
	} else {
		gatherRows(table.Float32s(), ids, y.Float32s(), op.d)
	}
	return y, nil
}

func gatherRows[T float](table []T, ids []int, y []T, d int) {
	for n, id := range ids {
		copy(y[n*d:(n+1)*d], table[id*d:(id+1)*d])
	}
}

func (op embeddingOp) DiffWRT(inputs int) []bool { return []bool{true, false} }

func (op embeddingOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	gop := embeddingGradOp{opBase{fmt.Sprintf("EmbeddingGrad{V=%d,D=%d}", op.vocab, op.d)}, op.vocab, op.d, newBuffer()}
	dt, err := gorgonia.ApplyOp(gop, inputs[1], grad) // (V, D)
	if err != nil {
		return nil, errors.Wrap(err, "embedding gradient")
	}
	return gorgonia.Nodes{dt, nil}, nil
}

// embeddingGradOp maps (ids (N), dy (N, D)) to the table gradient (V, D):
// row v is the sum of dy's rows whose id is v (repeated ids accumulate).
type embeddingGradOp struct {
	opBase
	vocab, d int
	out      *buffer
}

func (op embeddingGradOp) Arity() int { return 2 }

func (op embeddingGradOp) Type() hm.Type {
	return hm.NewFnType(intVector(), floatTensor(2), floatTensor(2))
}

func (op embeddingGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	if _, err := shapes(ds, 2); err != nil {
		return nil, err
	}
	return tensor.Shape{op.vocab, op.d}, nil
}

func (op embeddingGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	ids, err := embeddingIDs(inputs, 0, op.vocab)
	if err != nil {
		return nil, err
	}
	dy, err := denseArg(inputs, 1, 2, "embedding gradient")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("embedding gradient", dy); err != nil {
		return nil, err
	}
	if !dy.Shape().Eq(tensor.Shape{len(ids), op.d}) {
		return nil, errors.Errorf("embedding gradient: dy %v, want (%d, %d)", dy.Shape(), len(ids), op.d)
	}
	dt := op.out.zeroed(dy.Dtype(), op.vocab, op.d)
	if dy.Dtype() == tensor.Float64 {
		scatterAddRows(dy.Float64s(), ids, dt.Float64s(), op.d)
	} else {
		scatterAddRows(dy.Float32s(), ids, dt.Float32s(), op.d)
	}
	return dt, nil
}

func scatterAddRows[T float](dy []T, ids []int, dt []T, d int) {
	for n, id := range ids {
		dst, src := dt[id*d:(id+1)*d], dy[n*d:(n+1)*d]
		for j, v := range src {
			dst[j] += v
		}
	}
}
