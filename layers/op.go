package layers

import (
	"hash"
	"hash/fnv"
	"io"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// float is the element type of every kernel in this package.
type float interface{ float32 | float64 }

// opBase holds what every custom Op in this package shares. desc names the
// op and every parameter that changes its result, because Gorgonia merges
// nodes whose op hash and children are equal.
type opBase struct{ desc string }

func (o opBase) ReturnsPtr() bool      { return false }
func (o opBase) CallsExtern() bool     { return false }
func (o opBase) OverwritesInput() int  { return -1 }
func (o opBase) String() string        { return o.desc }
func (o opBase) WriteHash(h hash.Hash) { _, _ = io.WriteString(h, o.desc) }

func (o opBase) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// floatTensor is the type of a float tensor of the given rank; every tensor
// argument of one op shares the type variable, so dtypes cannot be mixed.
func floatTensor(dims int) hm.Type {
	return gorgonia.TensorType{Dims: dims, Of: hm.TypeVariable('a')}
}

// intVector is the type of a vector of token ids or targets.
func intVector() hm.Type { return gorgonia.TensorType{Dims: 1, Of: tensor.Int} }

// shapes converts the DimSizers Gorgonia passes to InferShape.
func shapes(ds []gorgonia.DimSizer, want int) ([]tensor.Shape, error) {
	if len(ds) != want {
		return nil, errors.Errorf("expected %d input shapes, got %d", want, len(ds))
	}
	return gorgonia.DimSizersToShapes(ds)
}

// denseArg returns input i as a contiguous row-major *tensor.Dense with the
// given rank, materialising views so kernels may index the backing slice.
func denseArg(inputs []gorgonia.Value, i, rank int, op string) (*tensor.Dense, error) {
	if i >= len(inputs) {
		return nil, errors.Errorf("%s: missing input %d", op, i)
	}
	d, ok := inputs[i].(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("%s: input %d is %T, want *tensor.Dense", op, i, inputs[i])
	}
	if d.Dims() != rank {
		return nil, errors.Errorf("%s: input %d has shape %v, want rank %d", op, i, d.Shape(), rank)
	}
	if d.IsView() || !d.DataOrder().IsRowMajor() {
		m, ok := d.Materialize().(*tensor.Dense)
		if !ok {
			return nil, errors.Errorf("%s: cannot materialise input %d", op, i)
		}
		d = m
	}
	return d, nil
}

// scalarArg reads a scalar gradient input as float64.
func scalarArg(v gorgonia.Value, op string) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *gorgonia.F32:
		return float64(*s), nil
	case *tensor.Dense:
		if s.Shape().TotalSize() != 1 {
			return 0, errors.Errorf("%s: gradient has shape %v, want a scalar", op, s.Shape())
		}
		switch data := s.Data().(type) {
		case []float64:
			return data[0], nil
		case []float32:
			return float64(data[0]), nil
		case float64:
			return data, nil
		case float32:
			return float64(data), nil
		}
	}
	return 0, errors.Errorf("%s: unsupported scalar gradient %T", op, v)
}

// sameDtype checks that every tensor has the dtype of the first.
func sameDtype(op string, ts ...*tensor.Dense) error {
	for i, t := range ts[1:] {
		if t.Dtype() != ts[0].Dtype() {
			return errors.Errorf("%s: input %d has dtype %v, input 0 has %v", op, i+1, t.Dtype(), ts[0].Dtype())
		}
	}
	if dt := ts[0].Dtype(); dt != tensor.Float64 && dt != tensor.Float32 {
		return errors.Errorf("%s: dtype %v, want float32 or float64", op, dt)
	}
	return nil
}
