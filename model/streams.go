package model

import (
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
)

// TensorStreams returns m's weights as Tensors does (names, shapes, dtype,
// order, the same bytes) but as streams a writer encodes a chunk at a time
// (safetensors.WriteSealed), so saving holds one chunk rather than a copy
// of the weights. NaN and Inf are refused as the chunk holding them is
// encoded, naming where in the tensor they sit.
func (m *Model) TensorStreams() ([]safetensors.Stream, error) {
	dtype, specs, err := m.savedSpecs()
	if err != nil {
		return nil, err
	}
	streams := make([]safetensors.Stream, len(specs))
	for i, spec := range specs {
		encode, err := paramEncoder(i, m.Params[i], spec, m.Dtype)
		if err != nil {
			return nil, err
		}
		streams[i] = safetensors.Stream{Name: spec.Name, DType: dtype, Shape: spec.Shape, Encode: encode}
	}
	return streams, nil
}

// savedSpecs returns the safetensors dtype of m's weights and the specs
// they are saved by, checking that m has one parameter per spec.
func (m *Model) savedSpecs() (string, []ParamSpec, error) {
	dtype, err := safetensorsDType(m.Dtype)
	if err != nil {
		return "", nil, err
	}
	specs := m.Config.ParamSpecs()
	if len(m.Params) != len(specs) {
		return "", nil, errors.Errorf("model has %d tensors, its config wants %d", len(m.Params), len(specs))
	}
	return dtype, specs, nil
}

// checkParam checks parameter i, p, against spec and the model's dtype.
func checkParam(i int, p Param, spec ParamSpec, dtype tensor.Dtype) error {
	switch {
	case p.Name != spec.Name:
		return errors.Errorf("tensor %d is %q, want %q", i, p.Name, spec.Name)
	case p.Value == nil:
		return errors.Errorf("tensor %q is nil", p.Name)
	case !slices.Equal(p.Value.Shape(), spec.Shape):
		return errors.Errorf("tensor %q has shape %v, want %v", p.Name, []int(p.Value.Shape()), spec.Shape)
	case p.Value.Dtype() != dtype:
		return errors.Errorf("tensor %q has dtype %v, the model %v", p.Name, p.Value.Dtype(), dtype)
	}
	return nil
}

// paramEncoder checks p against spec and the model's dtype and returns the
// encoder of its values in row-major order (a view is materialised first).
func paramEncoder(i int, p Param, spec ParamSpec, dtype tensor.Dtype) (func(dst []byte, off int) error, error) {
	if err := checkParam(i, p, spec, dtype); err != nil {
		return nil, err
	}
	encode, err := valuesEncoder(p.Value, spec)
	return encode, errors.Wrapf(err, "tensor %q", p.Name)
}

// valuesEncoder encodes t's values in row-major order (a view is
// materialised first), refusing NaN and Inf as each chunk is encoded.
func valuesEncoder(t *tensor.Dense, spec ParamSpec) (func(dst []byte, off int) error, error) {
	dense, ok := t.Materialize().(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("materialises to a %T, want a *tensor.Dense", t.Materialize())
	}
	n := product(spec.Shape)
	switch data := dense.Data().(type) {
	case []float32:
		if len(data) != n {
			return nil, errors.Errorf("backing array holds %d values, shape %v needs %d", len(data), spec.Shape, n)
		}
		return safetensors.Float32Encoder(data, finiteFrom[float32](spec.Name, spec.Shape)), nil
	case []float64:
		if len(data) != n {
			return nil, errors.Errorf("backing array holds %d values, shape %v needs %d", len(data), spec.Shape, n)
		}
		return safetensors.Float64Encoder(data, finiteFrom[float64](spec.Name, spec.Shape)), nil
	default:
		return nil, errors.Errorf("holds %T, want []float32 or []float64", data)
	}
}

// finiteFrom refuses NaN and Inf in a chunk of the tensor name of shape
// whose first value is at flat index off, naming where in the tensor it
// sits.
func finiteFrom[T float32 | float64](name string, shape []int) func(values []T, off int) error {
	return func(values []T, off int) error {
		if i := FirstNonFinite(values); i >= 0 {
			return &RefusedValue{errors.Errorf("tensor %q: value %v at %s is not finite", name, values[i], position(shape, off+i))}
		}
		return nil
	}
}

// RefusedValue is the error of a stream of TensorStreams that met NaN or
// Inf: the model's fault, not the writer's, so a saver reports it as its
// own (errors.As) rather than as a failed write.
type RefusedValue struct{ err error }

func (r *RefusedValue) Error() string { return r.err.Error() }
