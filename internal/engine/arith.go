package engine

import (
	"sync"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// Element-wise float32 arithmetic in eight-lane loops (kernels.MulTo, ...)
// where tensor's StdEng runs one element per iteration. Each lane does the
// same IEEE operation, so the values are StdEng's bit for bit.

var (
	_ tensor.Adder = Engine{}
	_ tensor.Suber = Engine{}
	_ tensor.Muler = Engine{}
	_ tensor.Diver = Engine{}
)

// Add is a + b element by element.
func (e Engine) Add(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return binary(a, b, opts, kernels.AddTo, e.StandardEngine.Add)
}

// Sub is a - b element by element.
func (e Engine) Sub(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return binary(a, b, opts, kernels.SubTo, e.StandardEngine.Sub)
}

// Mul is a * b element by element.
func (e Engine) Mul(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return binary(a, b, opts, kernels.MulTo, e.StandardEngine.Mul)
}

// Div is a / b element by element.
func (e Engine) Div(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	return binary(a, b, opts, kernels.DivTo, e.StandardEngine.Div)
}

// MulScalar is t * s (s * t when !leftTensor: the same values).
func (e Engine) MulScalar(t tensor.Tensor, s any, leftTensor bool, opts ...tensor.FuncOpt) (tensor.Tensor, error) {
	x, okX := float32s(t)
	v, okS := scalarFloat32(s)
	if okX && okS {
		if out, ok := destination(t.(*tensor.Dense), opts); ok {
			kernels.ScaleTo(x, v, out.Float32s())
			return out, nil
		}
	}
	return e.StandardEngine.MulScalar(t, s, leftTensor, opts...)
}

// binary is f(a, b) into the destination opts ask for, when the loops take
// it (both contiguous float32 tensors of one shape), else StdEng's op std.
func binary(a, b tensor.Tensor, opts []tensor.FuncOpt, f func(x, y, z []float32), std stdBinary) (tensor.Tensor, error) {
	x, okA := float32s(a)
	y, okB := float32s(b)
	if !okA || !okB || !a.Shape().Eq(b.Shape()) {
		return std(a, b, opts...)
	}
	out, ok := destination(a.(*tensor.Dense), opts)
	if !ok {
		return std(a, b, opts...)
	}
	f(x, y, out.Float32s())
	return out, nil
}

// stdBinary is the form of StdEng's element-wise operations.
type stdBinary func(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error)

// destination is where an operation on a writes as StdEng would: the reuse
// tensor, a itself when unsafe, else a new tensor. Incrementing and the
// comparison options are left to StdEng (false).
func destination(a *tensor.Dense, opts []tensor.FuncOpt) (*tensor.Dense, bool) {
	fo := optsPool.Get().(*tensor.OpOpt)
	for _, o := range opts {
		o(fo)
	}
	incr, same, as, reuse, safe := fo.Incr(), fo.Same(), fo.As(), fo.Reuse(), fo.Safe()
	*fo = tensor.OpOpt{}
	optsPool.Put(fo)
	if incr != nil || same || as.Type != nil {
		return nil, false
	}
	if reuse != nil {
		d, ok := reuse.(*tensor.Dense)
		if !ok || d.Dtype() != tensor.Float32 || !d.Shape().Eq(a.Shape()) || !contiguous(d) {
			return nil, false
		}
		return d, true
	}
	if !safe {
		return a, true
	}
	return tensor.New(tensor.Of(tensor.Float32), tensor.WithShape(a.Shape().Clone()...), Set), true
}

// optsPool holds the option sets destination reads FuncOpts into
// (tensor.ParseFuncOpts takes one from tensor's pool that only tensor can
// give back: one allocation per call).
var optsPool = sync.Pool{New: func() any { return new(tensor.OpOpt) }}

// float32s is t's elements when t is a contiguous float32 *tensor.Dense of
// at least one axis.
func float32s(t tensor.Tensor) ([]float32, bool) {
	d, ok := t.(*tensor.Dense)
	if !ok || d.Dtype() != tensor.Float32 || d.Shape().IsScalar() || !contiguous(d) {
		return nil, false
	}
	return d.Float32s(), true
}

// scalarFloat32 is s as a float32: a float32, or a float32 scalar *tensor.Dense.
func scalarFloat32(s any) (float32, bool) {
	switch v := s.(type) {
	case float32:
		return v, true
	case *tensor.Dense:
		if v.Shape().IsScalar() && v.Dtype() == tensor.Float32 {
			if f := v.Float32s(); len(f) == 1 {
				return f[0], true
			}
		}
	}
	return 0, false
}
