package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Embedding looks rows of Table (V, D) up by id, as PyTorch's nn.Embedding.
type Embedding struct {
	Vocab, D int
	Table    *gorgonia.Node // (V, D)
}

// NewEmbedding checks the table is a matrix.
func NewEmbedding(table *gorgonia.Node) (*Embedding, error) {
	if table == nil || table.Dims() != 2 {
		return nil, errors.Errorf("embedding table %v: want a (V, D) matrix", nodeShape(table))
	}
	return &Embedding{Vocab: table.Shape()[0], D: table.Shape()[1], Table: table}, nil
}

// Forward maps Int ids (N) to rows (N, D). Gorgonia's ByIndices returns row
// 0 for an out-of-range id without complaint, so ids must be validated
// before they are fed (model.Graph.Feed does).
func (e *Embedding) Forward(ids *gorgonia.Node) (*gorgonia.Node, error) {
	if ids.Dims() != 1 || ids.Dtype() != tensor.Int {
		return nil, errors.Errorf("embedding %s: ids %v of %v, want an Int vector", e.Table.Name(), ids.Shape(), ids.Dtype())
	}
	return gorgonia.ByIndices(e.Table, ids, 0) // (N, D)
}
