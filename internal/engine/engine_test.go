package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/internal/graphtest"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// randomDense is a tensor of shape with distinct values, on engine e.
func randomDense(rng *rand.Rand, dt tensor.Dtype, shape []int, e tensor.Engine) *tensor.Dense {
	n := 1
	for _, s := range shape {
		n *= s
	}
	var backing any
	switch dt {
	case tensor.Float32:
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i) + rng.Float32()
		}
		backing = v
	default:
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i) + rng.Float64()
		}
		backing = v
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing), tensor.WithEngine(e))
}

// sameTensor says how a differs from want: shape, strides or any element
// (bit for bit: %v prints each float in its shortest exact form).
func sameTensor(a, want tensor.Tensor) error {
	if !a.Shape().Eq(want.Shape()) {
		return fmt.Errorf("shape %v, want %v", a.Shape(), want.Shape())
	}
	if !slices.Equal(a.Strides(), want.Strides()) {
		return fmt.Errorf("strides %v, want %v", a.Strides(), want.Strides())
	}
	got, exp := fmt.Sprint(a.Data()), fmt.Sprint(want.Data())
	if got != exp {
		return fmt.Errorf("data %s, want %s", got, exp)
	}
	return nil
}

// transposeRef is x (of shape) with its axes in the order perm, by index
// arithmetic: out[i_0..i_n] = x[j] where j's axis perm[k] is i_k.
func transposeRef(x []float64, shape, perm []int) []float64 {
	out := make([]float64, len(x))
	outShape := make([]int, len(shape))
	for k, p := range perm {
		outShape[k] = shape[p]
	}
	idx := make([]int, len(shape))
	for o := range out {
		rest := o
		for k := len(outShape) - 1; k >= 0; k-- {
			idx[perm[k]] = rest % outShape[k]
			rest /= outShape[k]
		}
		j := 0
		for a := range shape {
			j = j*shape[a] + idx[a]
		}
		out[o] = x[j]
	}
	return out
}

// repeatRef is numpy's repeat of x (of shape) along axis, each element r
// times.
func repeatRef(x []float64, shape []int, axis, r int) []float64 {
	outer, n, inner := 1, shape[axis], 1
	for a, s := range shape {
		if a < axis {
			outer *= s
		} else if a > axis {
			inner *= s
		}
	}
	var out []float64
	for o := range outer {
		for i := range n {
			for range r {
				out = append(out, x[(o*n+i)*inner:(o*n+i+1)*inner]...)
			}
		}
	}
	return out
}

// TestEngineTransposeAndRepeat: Transpose and Repeat (and RepeatReuse)
// equal index-arithmetic references exactly (they only move values), over
// random shapes, axis orders, axes and repeat counts in float32 and
// float64. Transpose also equals the StandardEngine's in shape, strides
// and data; several repeat counts at once are handed to the StandardEngine.
func TestEngineTransposeAndRepeat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	std := gorgonia.StandardEngine{}
	for trial := range 300 {
		dt := tensor.Float32
		if trial%3 == 0 {
			dt = tensor.Float64
		}
		shape := make([]int, 2+rng.IntN(4))
		for i := range shape {
			shape[i] = 1 + rng.IntN(5)
		}
		perm := rng.Perm(len(shape))
		seed := rng.Uint64()
		mine := randomDense(rand.New(rand.NewPCG(seed, 1)), dt, shape, Engine{})
		theirs := randomDense(rand.New(rand.NewPCG(seed, 1)), dt, shape, std)
		x := slices.Clone(graphtest.Float64s(t, "x", mine))
		got, err := tensor.Transpose(mine, perm...)
		if err != nil {
			t.Fatalf("Transpose %v by %v: %v", shape, perm, err)
		}
		if !slices.Equal(graphtest.Float64s(t, "transposed", got), transposeRef(x, shape, perm)) {
			t.Fatalf("Transpose %v %v by %v: %v, want %v", dt, shape, perm, got.Data(), transposeRef(x, shape, perm))
		}
		want, err := tensor.Transpose(theirs, perm...)
		if err != nil {
			t.Fatalf("StandardEngine Transpose %v by %v: %v", shape, perm, err)
		}
		if err := sameTensor(got, want); err != nil {
			t.Fatalf("Transpose %v %v by %v against the StandardEngine: %v", dt, shape, perm, err)
		}

		axis := rng.IntN(len(shape))
		r := 2 + rng.IntN(3)
		got, err = tensor.Repeat(mine, axis, r)
		if err != nil {
			t.Fatalf("Repeat %v along %d by %d: %v", shape, axis, r, err)
		}
		wantShape := slices.Clone(shape)
		wantShape[axis] *= r
		if ref := repeatRef(x, shape, axis, r); !got.Shape().Eq(tensor.Shape(wantShape)) || !slices.Equal(graphtest.Float64s(t, "repeated", got), ref) {
			t.Fatalf("Repeat %v %v along %d by %d: %v %v, want %v %v", dt, shape, axis, r, got.Shape(), got.Data(), wantShape, ref)
		}
		reuse := randomDense(rng, dt, wantShape, Engine{})
		if _, err := tensor.RepeatReuse(mine, reuse, axis, r); err != nil {
			t.Fatalf("RepeatReuse %v along %d by %d: %v", shape, axis, r, err)
		}
		if err := sameTensor(reuse, got); err != nil {
			t.Fatalf("RepeatReuse %v %v along %d by %d against Repeat: %v", dt, shape, axis, r, err)
		}

		var long []int // axes of 2 or more, where one count per element is several counts
		for a, n := range shape {
			if n > 1 {
				long = append(long, a)
			}
		}
		if len(long) == 0 {
			continue
		}
		axis = long[rng.IntN(len(long))]
		counts := make([]int, shape[axis]) // the StandardEngine's own loop
		for i := range counts {
			counts[i] = 1 + rng.IntN(3)
		}
		got, err = tensor.Repeat(mine, axis, counts...)
		if err != nil {
			t.Fatalf("Repeat %v along %d by %v: %v", shape, axis, counts, err)
		}
		want, err = tensor.Repeat(theirs, axis, counts...)
		if err != nil {
			t.Fatalf("StandardEngine Repeat %v along %d by %v: %v", shape, axis, counts, err)
		}
		if err := sameTensor(got, want); err != nil {
			t.Fatalf("Repeat %v %v along %d by %v: %v", dt, shape, axis, counts, err)
		}
	}
}

// TestUpstreamRepeatOfOne pins a tensor v0.9.23 bug the engine does not
// have: StdEng's Repeat of a leading axis of length 1 by 1 keeps only the
// first element. Gorgonia's Repeat op never asks for it (a repeat of 1
// returns its input), so graphs are not affected either way.
func TestUpstreamRepeatOfOne(t *testing.T) {
	for _, e := range []tensor.Engine{gorgonia.StandardEngine{}, Engine{}} {
		x := tensor.New(tensor.WithShape(1, 4), tensor.WithBacking([]float32{1, 2, 3, 4}), tensor.WithEngine(e))
		got, err := tensor.Repeat(x, 0, 1)
		if err != nil {
			t.Fatalf("%T: Repeat (1, 4) along 0 by 1: %v", e, err)
		}
		want := []float32{1, 2, 3, 4}
		if _, std := e.(gorgonia.StandardEngine); std {
			want = []float32{1, 0, 0, 0}
		}
		if !slices.Equal(got.Data().([]float32), want) {
			t.Errorf("%T: Repeat (1, 4) along 0 by 1 = %v, want %v (upstream changed? re-check the engine's doc)", e, got.Data(), want)
		}
	}
}

// TestEngineRepeatReuseWrongShape: a reuse tensor of the wrong shape is
// refused as the StandardEngine refuses it, not written.
func TestEngineRepeatReuseWrongShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := randomDense(rng, tensor.Float32, []int{2, 3}, Engine{})
	reuse := randomDense(rng, tensor.Float32, []int{2, 5}, Engine{})
	before := slices.Clone(reuse.Data().([]float32))
	if _, err := tensor.RepeatReuse(src, reuse, 1, 2); err == nil {
		t.Fatal("RepeatReuse (2, 3) x2 along axis 1 into (2, 5): no error")
	}
	if !slices.Equal(reuse.Data().([]float32), before) {
		t.Error("RepeatReuse into a tensor of the wrong shape wrote it")
	}
}
