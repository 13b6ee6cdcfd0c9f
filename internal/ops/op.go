package ops

import (
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"unsafe"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// float is the element type of every kernel in this package.
type float interface{ float32 | float64 }

// A def is one op: its name, inputs, output shape and kernel. Everything
// else gorgonia.Op asks for (arity, type, shape inference, argument checks,
// the output buffer, the dtype dispatch, the hash) is op's, written once.
type def interface {
	// String names the op and every size or flag that changes its result:
	// Gorgonia merges nodes whose op hash and children are equal.
	String() string
	// signature lists the inputs in order and the output's rank.
	signature() signature
	// shape is the output shape for input shapes whose ranks already match
	// the signature; it reports sizes that do not fit together. Do calls it
	// on the actual inputs too, so kernels may trust every size.
	shape(in []tensor.Shape) (tensor.Shape, error)
	// run writes every element of a.y (a reused buffer) or, for a scalar
	// output, sets a.scalar.
	run(a *args) error
}

// A fixedDtype is a def whose output has one dtype whatever its inputs
// (the ops of a Stored weight, whose float32 output may come from Int ids
// alone).
type fixedDtype interface{ outDtype() tensor.Dtype }

// A grad is a def with a gradient. diff in each input of its signature says
// which inputs it is taken with respect to.
type grad interface {
	def
	// grad returns one node per input (nil where not diff) for the output's
	// gradient dy.
	grad(in gorgonia.Nodes, out, dy *gorgonia.Node) (gorgonia.Nodes, error)
}

type argKind int

const (
	floats argKind = iota // a float tensor in the op's dtype
	ints                  // an Int vector: token ids or targets
	scalar                // a scalar gradient of the op's dtype
)

type input struct {
	kind argKind
	rank int  // for floats; ints are rank 1, scalars rank 0
	diff bool // the op's gradient flows to this input
}

// floatIn is a float tensor input of the given rank, differentiable or not.
func floatIn(rank int, diff bool) input { return input{kind: floats, rank: rank, diff: diff} }

var (
	intsIn   = input{kind: ints, rank: 1}
	scalarIn = input{kind: scalar}
)

type signature struct {
	in  []input
	out int // the output's rank; 0 is a scalar
}

// args is what a kernel sees: inputs checked and contiguous, all of one
// float dtype, and the output buffer in that dtype.
type args struct {
	in     []*tensor.Dense // by position; nil for an ints or scalar input
	ids    []int           // the ints input, if any
	dy     float64         // the scalar input, if any
	y      *tensor.Dense   // the output; nil for a scalar output
	scalar float64         // the scalar output
}

// data is input i's backing slice (nil when i is not a float tensor).
func data[T float](a *args, i int) []T {
	if a.in[i] == nil {
		return nil
	}
	return backing[T](a.in[i])
}

// out is the output's backing slice.
func out[T float](a *args) []T { return backing[T](a.y) }

// backing is t's data as []T, T being t's dtype. Dense.Data would box the
// slice in an interface: one allocation per call, per op, per step.
func backing[T float](t *tensor.Dense) []T {
	if unsafe.Sizeof(*new(T)) == 4 {
		f := t.Float32s()
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
	}
	f := t.Float64s()
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// byDtype runs k64 or k32, the float64 and float32 instantiations of one
// generic kernel, by the output's dtype (or the first input's for a scalar
// output): the one place an op's element type is chosen.
func byDtype[D any](d D, a *args, k64 func(D, *args), k32 func(D, *args)) error {
	var dt tensor.Dtype
	if a.y != nil {
		dt = a.y.Dtype()
	} else {
		dt = a.in[0].Dtype()
	}
	if dt == tensor.Float64 {
		k64(d, a)
	} else {
		k32(d, a)
	}
	return nil
}

// apply adds a node computing d of inputs to their graph.
func apply(d def, inputs ...*gorgonia.Node) (*gorgonia.Node, error) {
	o := newOp(d)
	if g, ok := d.(grad); ok {
		return gorgonia.ApplyOp(diffOp{o, g}, inputs...)
	}
	return gorgonia.ApplyOp(o, inputs...)
}

// newOp is the gorgonia.Op of d, with its own output buffer and state.
func newOp(d def) op {
	sig := d.signature()
	n := len(sig.in)
	return op{def: d, sig: sig, st: &state{args: args{in: make([]*tensor.Dense, n)}, shapes: make([]tensor.Shape, n)}}
}

// op implements gorgonia.Op for any def.
type op struct {
	def
	sig signature // d.signature(), once
	st  *state
}

// state is what one op node reuses from run to run, as its output buffer:
// a node runs at most once per run and a graph on one goroutine at a time.
// With it, Do allocates nothing once the shapes are known.
type state struct {
	out    buffer
	args   args
	shapes []tensor.Shape // this run's input shapes
	lastIn []tensor.Shape // the input shapes of the last run (copies)
	lastY  tensor.Shape   // and the output shape they gave
}

// Release lets go of the node's output buffer, for a machine that runs the
// graph once (engine.NewOneShotMachine, after the node's last reader): the
// memory is collected once no value handed out refers to it, and a later
// run allocates the buffer again.
func (o op) Release() { o.st.out.t, o.st.args.y = nil, nil }

// Prealloc hands the node a buffer to write its output into when it has
// none (engine.NewOneShotMachine hands on the memory of values no longer
// read); the kernels write every element, and a buffer of another dtype or
// shape is replaced as any other (buffer.get).
func (o op) Prealloc(t *tensor.Dense) {
	if o.st.out.t == nil {
		o.st.out.t = t
	}
}

func (o op) Arity() int            { return len(o.sig.in) }
func (o op) ReturnsPtr() bool      { return false }
func (o op) CallsExtern() bool     { return false }
func (o op) OverwritesInput() int  { return -1 }
func (o op) WriteHash(h hash.Hash) { _, _ = io.WriteString(h, o.String()) }

func (o op) Hashcode() uint32 {
	h := fnv.New32a()
	o.WriteHash(h)
	return h.Sum32()
}

// Type: every float argument and the output share the type variable, so
// dtypes cannot be mixed.
func (o op) Type() hm.Type {
	sig := o.sig
	a := hm.TypeVariable('a')
	ts := make([]hm.Type, 0, len(sig.in)+1)
	for i, in := range append(sig.in, floatIn(sig.out, false)) {
		fixed, ok := o.def.(fixedDtype)
		switch {
		case ok && i == len(sig.in):
			ts = append(ts, gorgonia.TensorType{Dims: in.rank, Of: fixed.outDtype()})
		case in.kind == ints:
			ts = append(ts, gorgonia.TensorType{Dims: 1, Of: tensor.Int})
		case in.kind == scalar || in.rank == 0:
			ts = append(ts, a)
		default:
			ts = append(ts, gorgonia.TensorType{Dims: in.rank, Of: a})
		}
	}
	return hm.NewFnType(ts...)
}

func (o op) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	in := o.sig.in
	if len(ds) != len(in) {
		return nil, errors.Errorf("%s: %d input shapes, want %d", o, len(ds), len(in))
	}
	s, err := gorgonia.DimSizersToShapes(ds)
	if err != nil {
		return nil, err
	}
	if err := o.checkRanks(s); err != nil {
		return nil, err
	}
	return o.shape(s)
}

func (o op) checkRanks(s []tensor.Shape) error {
	for i, in := range o.sig.in {
		if in.kind != scalar && len(s[i]) != in.rank {
			return errors.Errorf("%s: input %d has shape %v, want rank %d", o, i, s[i], in.rank)
		}
	}
	return nil
}

func (o op) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	sig, st := o.sig, o.st
	if len(inputs) != len(sig.in) {
		return nil, errors.Errorf("%s: %d inputs, want %d", o, len(inputs), len(sig.in))
	}
	a, shapes := &st.args, st.shapes
	clear(a.in)
	a.ids, a.dy, a.y, a.scalar = nil, 0, nil, 0
	dt := tensor.Dtype{}
	for i, in := range sig.in {
		if in.kind == scalar {
			v, err := scalarArg(inputs[i])
			if err != nil {
				return nil, errors.Wrap(err, o.String())
			}
			a.dy = v
			continue
		}
		t, err := denseArg(inputs[i])
		if err != nil {
			return nil, errors.Wrapf(err, "%s: input %d", o, i)
		}
		shapes[i] = t.Shape()
		if in.kind == ints {
			if t.Dtype() != tensor.Int {
				return nil, errors.Errorf("%s: input %d holds %v, want Int", o, i, t.Dtype())
			}
			a.ids = t.Ints()
			continue
		}
		if t.Dtype() != tensor.Float64 && t.Dtype() != tensor.Float32 {
			return nil, errors.Errorf("%s: input %d holds %v, want float32 or float64", o, i, t.Dtype())
		}
		if dt == (tensor.Dtype{}) {
			dt = t.Dtype()
		} else if t.Dtype() != dt {
			return nil, errors.Errorf("%s: input %d holds %v, an earlier input %v", o, i, t.Dtype(), dt)
		}
		a.in[i] = t
	}
	y, err := o.outShape(shapes)
	if err != nil {
		return nil, err
	}
	if fixed, ok := o.def.(fixedDtype); ok {
		dt = fixed.outDtype()
	}
	if sig.out > 0 {
		a.y = st.out.get(dt, y...)
	}
	err = o.run(a)
	// The state keeps no input from run to run: a node whose value is
	// kept (an attention map) must not keep what it was computed from.
	clear(a.in)
	a.ids = nil
	if err != nil {
		return nil, err
	}
	switch {
	case a.y != nil:
		return a.y, nil
	case dt == tensor.Float64:
		return gorgonia.NewF64(a.scalar), nil
	default:
		return gorgonia.NewF32(float32(a.scalar)), nil
	}
}

// outShape is shape(in) after checkRanks, or the last run's output shape
// when the input shapes are the last run's.
func (o op) outShape(in []tensor.Shape) (tensor.Shape, error) {
	st := o.st
	if st.lastY != nil && len(st.lastIn) == len(in) {
		same := true
		for i, s := range in {
			same = same && s.Eq(st.lastIn[i])
		}
		if same {
			return st.lastY, nil
		}
	}
	if err := o.checkRanks(in); err != nil {
		return nil, err
	}
	y, err := o.shape(in)
	if err != nil {
		return nil, err
	}
	st.lastIn = st.lastIn[:0]
	for _, s := range in {
		st.lastIn = append(st.lastIn, s.Clone())
	}
	st.lastY = y
	return y, nil
}

// diffOp is an op with a gradient (gorgonia.SDOp).
type diffOp struct {
	op
	g grad
}

func (o diffOp) DiffWRT(inputs int) []bool {
	diff := make([]bool, inputs)
	for i, in := range o.sig.in[:min(inputs, len(o.sig.in))] {
		diff[i] = in.diff
	}
	return diff
}

func (o diffOp) SymDiff(inputs gorgonia.Nodes, output, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	grads, err := o.g.grad(inputs, output, dy)
	return grads, errors.Wrapf(err, "%s gradient", o)
}

// denseArg returns v as a contiguous row-major *tensor.Dense, materialising
// views so kernels may index the backing slice.
func denseArg(v gorgonia.Value) (*tensor.Dense, error) {
	d, ok := v.(*tensor.Dense)
	if !ok {
		return nil, errors.Errorf("%T, want *tensor.Dense", v)
	}
	if d.IsView() || !d.DataOrder().IsRowMajor() {
		if d, ok = d.Materialize().(*tensor.Dense); !ok {
			return nil, errors.New("cannot materialise a view")
		}
	}
	return d, nil
}

// scalarArg reads a scalar gradient input as float64.
func scalarArg(v gorgonia.Value) (float64, error) {
	switch s := v.(type) {
	case *gorgonia.F64:
		return float64(*s), nil
	case *gorgonia.F32:
		return float64(*s), nil
	case *tensor.Dense:
		if s.Shape().TotalSize() != 1 {
			return 0, errors.Errorf("gradient has shape %v, want a scalar", s.Shape())
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
	return 0, errors.Errorf("unsupported scalar gradient %T", v)
}

// fixedShape is the output shape out of the one-input op d, after checking
// that its input shape got is the one it takes, in.
func fixedShape(d fmt.Stringer, got, in, out tensor.Shape) (tensor.Shape, error) {
	if !got.Eq(in) {
		return nil, errors.Errorf("%v: input shape %v, want %v", d, got, in)
	}
	return out, nil
}

// gradOf is the gradient of an op with respect to its one input when that
// gradient is the op d of inputs (the inverse permutation, the reverse
// rotation).
func gradOf(d def, inputs ...*gorgonia.Node) (gorgonia.Nodes, error) {
	dx, err := apply(d, inputs...)
	return gorgonia.Nodes{dx}, err
}

// same checks that every shape equals the first and returns it.
func same(what string, s ...tensor.Shape) (tensor.Shape, error) {
	for _, x := range s[1:] {
		if !x.Eq(s[0]) {
			return nil, errors.Errorf("%s: shapes %v differ", what, s)
		}
	}
	return s[0].Clone(), nil
}
