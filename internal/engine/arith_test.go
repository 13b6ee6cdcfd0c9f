package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestEngineArithmeticMatchesStandardEngine: Add, Sub, Mul, Div and
// MulScalar give the StandardEngine's values bit for bit, and write where it
// writes, for each way Gorgonia's ops call them: into a new tensor (Do),
// into a reuse tensor (UsePreallocDo), into the first operand (UseUnsafe)
// and incrementing (WithIncr, which the engine hands to the StandardEngine),
// in float32 (the fast loops, lengths with and without a tail) and float64.
func TestEngineArithmeticMatchesStandardEngine(t *testing.T) {
	std := gorgonia.StandardEngine{}
	ops := []struct {
		name string
		run  func(a, b tensor.Tensor, opts ...tensor.FuncOpt) (tensor.Tensor, error)
	}{
		{"Add", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) { return tensor.Add(a, b, o...) }},
		{"Sub", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) { return tensor.Sub(a, b, o...) }},
		{"Mul", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) { return tensor.Mul(a, b, o...) }},
		{"Div", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) { return tensor.Div(a, b, o...) }},
		{"Mul by a scalar tensor", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) {
			return tensor.Mul(a, scalarOf(b), o...)
		}},
		{"Mul of a scalar tensor", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) {
			return tensor.Mul(scalarOf(b), a, o...)
		}},
		{"Mul by a float", func(a, b tensor.Tensor, o ...tensor.FuncOpt) (tensor.Tensor, error) {
			return tensor.Mul(a, scalarOf(b).Data(), o...)
		}},
	}
	modes := []string{"new", "reuse", "unsafe", "incr"}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{3, 5}, {2, 3, 8}, {37}} {
			for _, op := range ops {
				for _, mode := range modes {
					seed := rng.Uint64()
					run := func(e tensor.Engine) (result, a, dest tensor.Tensor) {
						r := rand.New(rand.NewPCG(seed, 1))
						a, b := randomDense(r, dt, shape, e), randomDense(r, dt, shape, e)
						var opts []tensor.FuncOpt
						switch mode {
						case "reuse":
							dest = randomDense(r, dt, shape, e)
							opts = append(opts, tensor.WithReuse(dest))
						case "unsafe":
							opts = append(opts, tensor.UseUnsafe())
						case "incr":
							dest = randomDense(r, dt, shape, e)
							opts = append(opts, tensor.WithIncr(dest))
						}
						res, err := op.run(a, b, opts...)
						if err != nil {
							t.Fatalf("%v %v %s (%s) on %T: %v", dt, shape, op.name, mode, e, err)
						}
						return res, a, dest
					}
					got, gotA, gotDest := run(Engine{})
					want, wantA, wantDest := run(std)
					where := fmt.Sprintf("%v %v %s (%s)", dt, shape, op.name, mode)
					if err := sameTensor(got, want); err != nil {
						t.Fatalf("%s: result %v", where, err)
					}
					if err := sameTensor(gotA, wantA); err != nil {
						t.Fatalf("%s: first operand afterwards %v", where, err)
					}
					if gotDest != nil {
						if err := sameTensor(gotDest, wantDest); err != nil {
							t.Fatalf("%s: destination afterwards %v", where, err)
						}
					}
					switch mode {
					case "reuse", "incr":
						if got != gotDest {
							t.Errorf("%s: the result is not the destination tensor", where)
						}
					case "unsafe":
						if got != gotA {
							t.Errorf("%s: the result is not the first operand", where)
						}
					}
				}
			}
		}
	}
}

// scalarOf is a scalar tensor (of t's dtype and engine) holding 0.75.
func scalarOf(t tensor.Tensor) *tensor.Dense {
	if t.Dtype() == tensor.Float32 {
		return tensor.New(tensor.FromScalar(float32(0.75)), tensor.WithEngine(t.Engine()))
	}
	return tensor.New(tensor.FromScalar(0.75), tensor.WithEngine(t.Engine()))
}
