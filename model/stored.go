package model

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/layers"
)

// A model opened from a file for inspection may keep its large matrices in
// the file's dtype where the file's mapping holds them (Param.Stored, an
// ops.Stored: BF16 or F16, read in place) rather than widened into float32
// values: an 8B model then costs its file's 16 GB of page cache, shared,
// not 32 GB of the process's own. Only the fused path reads them
// (layers.Linear.Stored, layers.Embedding.Stored, through ops.LinearStored
// and ops.EmbeddingStored); the Gorgonia path, training and the analyses
// that read a weight whole get it widened (WidenStored, Param).

// Stored is the stored form of the parameter called name, or nil when the
// model holds it as a tensor (or has no such parameter).
func (m *Model) Stored(name string) *ops.Stored {
	for _, p := range m.Params {
		if p.Name == name {
			return p.Stored
		}
	}
	return nil
}

// Len is the number of weights of p, stored or not.
func (p Param) Len() int {
	if p.Stored != nil {
		return p.Stored.Rows * p.Stored.Cols
	}
	return p.Value.Shape().TotalSize()
}

// HasStored reports whether any parameter is kept in its file's dtype.
func (m *Model) HasStored() bool {
	for _, p := range m.Params {
		if p.Stored != nil {
			return true
		}
	}
	return false
}

// WeightBytes are the bytes of the model's weights as it holds them:
// mapped, a stored parameter's in its file's dtype, and the tensors' own.
func (m *Model) WeightBytes() (mapped, own float64) {
	for _, p := range m.Params {
		if p.Stored != nil {
			mapped += float64(p.Stored.Bytes())
		} else if p.Value != nil {
			own += float64(p.Value.Shape().TotalSize()) * float64(p.Value.Dtype().Size())
		}
	}
	return mapped, own
}

// WidenStored turns every stored parameter into a float32 tensor, for the
// Gorgonia path and training, which read float32 values only. The widened
// model must fit: 4 bytes a weight, against MaxMemory and against the
// memory the machine has available (CheckResident), both refused before
// anything is copied, with the estimate. The mapping stays (the caller
// owns it); nothing reads it afterwards.
func (m *Model) WidenStored() error {
	if !m.HasStored() {
		return nil
	}
	bytes := 4 * m.Config.ParamCount()
	what := "the model widened to float32 (the Gorgonia path reads float32 weights only)"
	if err := CheckMemory(bytes, what, "use the fused path, which reads BF16 and F16 weights in place"); err != nil {
		return err
	}
	if err := CheckResident(bytes, what); err != nil {
		return err
	}
	block := ParamBlock[float32](m.Config)
	for i, p := range m.Params {
		dst, shape := block[p.Name], []int{}
		if p.Stored != nil {
			if err := p.Stored.WidenRows(dst, 0, p.Stored.Rows); err != nil {
				return err
			}
			shape = []int{p.Stored.Rows, p.Stored.Cols}
		} else {
			copy(dst, p.Value.Float32s())
			shape = p.Value.Shape().Clone()
		}
		m.Params[i] = Param{Name: p.Name, Value: tensor.New(tensor.WithShape(shape...), tensor.WithBacking(dst))}
	}
	m.Config.MappedWeights = 0
	return nil
}

// widened is the stored parameter s as a float32 tensor, a copy.
func widened(s *ops.Stored) (*tensor.Dense, error) {
	values, err := s.Widen()
	if err != nil {
		return nil, err
	}
	return tensor.New(tensor.WithShape(s.Rows, s.Cols), tensor.WithBacking(values)), nil
}

// paramNode adds p to g as an input bound to its tensor. A stored
// parameter has no tensor: its node, which gives the layers its name and
// shape and which the stored ops (its only readers) never read, goes into
// a graph of its own, outside g, so that no machine of g loads it.
func paramNode(g *gorgonia.ExprGraph, p Param) *gorgonia.Node {
	if p.Stored == nil {
		return layers.NewParam(g, p.Name, p.Value)
	}
	return gorgonia.NewTensor(gorgonia.NewGraph(), tensor.Float32, 2, gorgonia.WithShape(p.Stored.Rows, p.Stored.Cols), gorgonia.WithName(p.Name))
}

// checkStored refuses a stored parameter a graph of path cannot read, or
// whose shape or model dtype is not its spec's.
func checkStored(m *Model, p Param, spec ParamSpec, path layers.Path, train bool) error {
	switch {
	case path == layers.Gorgonia:
		return errors.Errorf("build: tensor %q is kept in its file's %s; the gorgonia path reads float32 weights only (widen the model first, Model.WidenStored)", p.Name, p.Stored.DType)
	case train:
		return errors.Errorf("build: tensor %q is kept in its file's %s, read only; a training graph needs float32 weights", p.Name, p.Stored.DType)
	case m.Dtype != tensor.Float32:
		return errors.Errorf("build: tensor %q is stored (%s) in a %v model; stored weights multiply float32", p.Name, p.Stored.DType, m.Dtype)
	case len(spec.Shape) != 2 || spec.Shape[0] != p.Stored.Rows || spec.Shape[1] != p.Stored.Cols:
		return errors.Errorf("build: tensor %q is stored (%d, %d), want %v", p.Name, p.Stored.Rows, p.Stored.Cols, spec.Shape)
	}
	return errors.Wrapf(p.Stored.Check(), "build: tensor %s", msg.Quote(p.Name))
}
