package ops

import "gorgonia.org/tensor"

// buffer is an output tensor an op owns and overwrites on every run instead
// of allocating a new one. Gorgonia's TapeMachine forgets every register in
// Reset, so without it each op output is a fresh allocation per step (about
// 130 MB per training step at B64 T64 D128) plus the garbage collection that
// follows. Reuse is safe because a node runs at most once per run, a graph
// runs on one goroutine at a time, and a node's value is only valid until the
// next run anyway.
//
// Each op node gets its own buffer (ops are built per ApplyOp call), so two
// nodes never share memory, and neither do two graphs.
type buffer struct{ t *tensor.Dense }

// get returns the buffer as a tensor of dtype dt and the given shape,
// allocating it on first use or when the shape or dtype changes. The
// contents are whatever the last run left: kernels write every element
// (those that accumulate clear it first).
func (b *buffer) get(dt tensor.Dtype, shape ...int) *tensor.Dense {
	if b.t == nil || b.t.Dtype() != dt || !sameShape(b.t.Shape(), shape) {
		b.t = tensor.New(tensor.Of(dt), tensor.WithShape(shape...))
	}
	return b.t
}

func sameShape(s tensor.Shape, shape []int) bool {
	if len(s) != len(shape) {
		return false
	}
	for i, n := range shape {
		if s[i] != n {
			return false
		}
	}
	return true
}
