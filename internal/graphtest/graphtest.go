package graphtest

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Param adds an input node called name bound to value (as layers.NewParam).
func Param(g *gorgonia.ExprGraph, name string, value *tensor.Dense) *gorgonia.Node {
	return gorgonia.NewTensor(g, value.Dtype(), value.Dims(),
		gorgonia.WithShape(value.Shape().Clone()...), gorgonia.WithName(name), gorgonia.WithValue(value))
}

// RandDense returns a float64 tensor of N(0, std^2) entries from rng.
func RandDense(rng *rand.Rand, std float64, shape ...int) *tensor.Dense {
	n := tensor.Shape(shape).TotalSize()
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() * std
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
}

// ToF32 converts a float64 tensor to float32.
func ToF32(t *tensor.Dense) *tensor.Dense {
	f := make([]float32, t.Shape().TotalSize())
	for i, v := range t.Float64s() {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(t.Shape().Clone()...), tensor.WithBacking(f))
}

// Set sets element i of d, a float32 or float64 tensor, to v.
func Set(d *tensor.Dense, i int, v float64) {
	switch data := d.Data().(type) {
	case []float32:
		data[i] = float32(v)
	case []float64:
		data[i] = v
	}
}

// Run runs g once on a fresh TapeMachine.
func Run(t *testing.T, g *gorgonia.ExprGraph) {
	t.Helper()
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
}

// Must fails the test on a graph-building error.
func Must(t *testing.T) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// Values returns a node's value as float64s (the backing slice itself for
// float64 tensors).
func Values(t *testing.T, n *gorgonia.Node) []float64 {
	t.Helper()
	return Float64s(t, "node "+n.Name(), n.Value())
}

// Float64s returns the data of v, a tensor or a scalar, as float64s: the
// backing slice itself for a float64 tensor, a converted copy for float32.
// what names v if it holds anything else.
func Float64s(t testing.TB, what string, v interface{ Data() any }) []float64 {
	t.Helper()
	switch d := v.Data().(type) {
	case []float64:
		return d
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case float64:
		return []float64{d}
	case float32:
		return []float64{float64(d)}
	}
	t.Fatalf("%s holds %T", what, v.Data())
	return nil
}

// MaxAbsDiff is max_i |a_i - b_i| (+Inf for a NaN); lengths must match.
func MaxAbsDiff(t *testing.T, a, b []float64) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("lengths %d and %d differ", len(a), len(b))
	}
	var m float64
	for i := range a {
		d := math.Abs(a[i] - b[i])
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		m = math.Max(m, d)
	}
	return m
}

// CheckRelative fails unless max |got - want| <= tol * max(1, max |want|).
func CheckRelative(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(v))
	}
	if e := MaxAbsDiff(t, got, want); e > tol*scale {
		t.Errorf("%s differs by %.3g (largest entry %.3g)", what, e, scale)
	}
}

// Eval returns a function that reruns vm and returns the scalar node cost.
func Eval(t *testing.T, vm gorgonia.VM, cost *gorgonia.Node) func() float64 {
	return func() float64 {
		t.Helper()
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return Values(t, cost)[0]
	}
}

// Gradients adds the gradients of the scalar node cost with respect to wrt,
// runs g once on a new TapeMachine (closed when the test ends) and returns
// eval (see Eval) and copies of the gradients' values.
func Gradients(t *testing.T, g *gorgonia.ExprGraph, cost *gorgonia.Node, wrt gorgonia.Nodes) (eval func() float64, grads [][]float64) {
	t.Helper()
	nodes, err := gorgonia.Grad(cost, wrt...)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	t.Cleanup(func() { vm.Close() })
	eval = Eval(t, vm, cost)
	eval()
	for _, n := range nodes {
		grads = append(grads, append([]float64(nil), Values(t, n)...))
	}
	return eval, grads
}

// FiniteDifferences compares grads[i], the gradient of the cost eval
// returns with respect to wrt[i], with central differences (h = 1e-6),
// perturbing each float64 node value in place. Tolerance: per node,
// ||grad - fd||_2 < 1e-7 ||fd||_2.
func FiniteDifferences(t *testing.T, wrt gorgonia.Nodes, grads [][]float64, eval func() float64) {
	t.Helper()
	for i, n := range wrt {
		var diff, norm float64
		for j, fd := range CentralDifferences(eval, n.Value().Data().([]float64)) {
			diff += (fd - grads[i][j]) * (fd - grads[i][j])
			norm += fd * fd
		}
		if rel := math.Sqrt(diff / math.Max(norm, 1e-300)); !(rel < 1e-7) {
			t.Errorf("%s: gradient differs from finite differences by %.3g relative", n.Name(), rel)
		}
	}
}

// CentralDifferences is the gradient of f with respect to v by central
// differences, (f(v + h e_j) - f(v - h e_j)) / 2h with h = 1e-6, for f
// reading v: each entry is perturbed in place and restored.
func CentralDifferences(f func() float64, v []float64) []float64 {
	const h = 1e-6
	fd := make([]float64, len(v))
	for j, w := range v {
		v[j] = w + h
		up := f()
		v[j] = w - h
		down := f()
		v[j] = w
		fd[j] = (up - down) / (2 * h)
	}
	return fd
}

// Norm is the float64 reference of a norm of each row of x, rows as wide
// as w: a LayerNorm, (x - mean) / sqrt(var + eps) * w + b with the biased
// variance (no b when b is nil), or with rms an RMSNorm,
// x / sqrt(mean(x^2) + eps) * w.
func Norm(x, w, b []float64, eps float64, rms bool) []float64 {
	d := len(w)
	y := make([]float64, len(x))
	for r := 0; r < len(x)/d; r++ {
		row := x[r*d : (r+1)*d]
		var mean, sq float64
		if !rms {
			for _, v := range row {
				mean += v
			}
			mean /= float64(d)
		}
		for _, v := range row {
			sq += (v - mean) * (v - mean)
		}
		for j, v := range row {
			y[r*d+j] = (v - mean) / math.Sqrt(sq/float64(d)+eps) * w[j]
			if b != nil {
				y[r*d+j] += b[j]
			}
		}
	}
	return y
}

// RMSNorm sets the row x to its RMSNorm (QK-norm's per head).
func RMSNorm(x, w []float64, eps float64) { copy(x, Norm(x, w, nil, eps, true)) }

// Activation is the MLP activation model.activation names (gelu_tanh or
// "", gelu, relu2) at v, by its textbook formula in float64, for the
// references layers and models are tested against.
func Activation(name string, v float64) float64 {
	switch name {
	case "gelu":
		return 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
	case "relu2":
		return max(v, 0) * max(v, 0)
	}
	return 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
}

// SiLU is z sigmoid(z), SwiGLU's gate.
func SiLU(z float64) float64 { return z / (1 + math.Exp(-z)) }
