package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// Embedding looks rows of Table (V, D) up by id, as PyTorch's nn.Embedding.
type Embedding struct {
	Vocab, D int
	Table    *gorgonia.Node // (V, D)
	Path     Path           // which ops Forward writes; "" is Fused
	// Stored, when set, is the table kept in its file's dtype, read in
	// place on the fused path (ops.EmbeddingStored), as Linear.Stored.
	Stored *ops.Stored
}

// NewEmbedding checks the table is a matrix.
func NewEmbedding(table *gorgonia.Node) (*Embedding, error) {
	if table == nil || table.Dims() != 2 {
		return nil, errors.Errorf("embedding table %v: want a (V, D) matrix", nodeShape(table))
	}
	return &Embedding{Vocab: table.Shape()[0], D: table.Shape()[1], Table: table}, nil
}

// Forward maps Int ids (N) to rows (N, D): ops.Embedding on the fused path
// (an id outside [0, V) fails the run naming its position), ByIndices on the
// Gorgonia path.
func (e *Embedding) Forward(ids *gorgonia.Node) (rows *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	return e.forward(ids), nil
}

func (e *Embedding) forward(ids *gorgonia.Node) *gorgonia.Node {
	if ids.Dims() != 1 || ids.Dtype() != tensor.Int {
		raise.If(errors.Errorf("embedding %s: ids %v of %v, want an Int vector", e.Table.Name(), ids.Shape(), ids.Dtype()))
	}
	switch {
	case e.Path == Gorgonia && e.Stored != nil:
		raise.If(errors.Errorf("embedding %s: the table is kept in its file's %s; the gorgonia path reads float32 weights only", e.Table.Name(), e.Stored.DType))
	case e.Path == Gorgonia:
		return e.forwardGorgonia(ids)
	case e.Stored != nil:
		return node(prefixOf(e.Table))(ops.EmbeddingStored(e.Stored, ids)) // (N, D)
	}
	return node(prefixOf(e.Table))(ops.Embedding(e.Table, ids)) // (N, D)
}
