package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestEngineMatMul: tensor.MatMul on this engine equals StdEng's bit for bit
// (both call the BLAS Gorgonia uses with the same arguments) and a float64
// triple loop to 1e-5 relative, for contiguous and transposed operands, the
// per-(batch, head) views BatchedMatMul slices from a 3-D tensor, shapes
// with an axis of 1 (handed to StdEng) and float64 (StdEng).
func TestEngineMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 200 {
		dt := tensor.Float32
		if trial%10 == 0 {
			dt = tensor.Float64
		}
		m, k, n := 1+rng.IntN(9), 1+rng.IntN(9), 1+rng.IntN(9)
		transA, transB, sliced := rng.IntN(2) == 1, rng.IntN(2) == 1, rng.IntN(2) == 1
		seed := rng.Uint64()
		product := func(e tensor.Engine) (tensor.Tensor, [][]float64, [][]float64) {
			r := rand.New(rand.NewPCG(seed, 1))
			operand := func(rows, cols int, trans bool) (*tensor.Dense, [][]float64) {
				stored := []int{rows, cols}
				if trans {
					stored = []int{cols, rows}
				}
				var d *tensor.Dense
				if sliced { // the second of three matrices, as BatchedMatMul slices them
					whole := randomDense(r, dt, append([]int{3}, stored...), e)
					v, err := whole.Slice(gorgonia.S(1))
					if err != nil {
						t.Fatal(err)
					}
					d = v.(*tensor.Dense)
					if err := d.Reshape(stored...); err != nil { // Slice drops axes of 1, as BatchedMatMul puts them back
						t.Fatal(err)
					}
				} else {
					d = randomDense(r, dt, stored, e)
				}
				values := make([][]float64, rows)
				for i := range values {
					values[i] = make([]float64, cols)
					for j := range values[i] {
						at := []int{i, j}
						if trans {
							at = []int{j, i}
						}
						v, err := d.At(at...)
						if err != nil {
							t.Fatal(err)
						}
						values[i][j] = toFloat64(v)
					}
				}
				if trans {
					if err := d.T(); err != nil {
						t.Fatal(err)
					}
				}
				return d, values
			}
			a, av := operand(m, k, transA)
			b, bv := operand(k, n, transB)
			out, err := tensor.MatMul(a, b)
			if err != nil {
				t.Fatalf("MatMul (%d, %d) x (%d, %d) on %T: %v", m, k, k, n, e, err)
			}
			return out, av, bv
		}
		where := fmt.Sprintf("%v (%d, %d) x (%d, %d), transposed %v %v, sliced %v", dt, m, k, k, n, transA, transB, sliced)
		got, av, bv := product(Engine{})
		want, _, _ := product(gorgonia.StandardEngine{})
		if err := sameTensor(got, want); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		for i := range m {
			for j := range n {
				ref := 0.0
				for p := range k {
					ref += av[i][p] * bv[p][j]
				}
				v, err := got.At(i, j)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(toFloat64(v)-ref) > 1e-5*(1+math.Abs(ref)) {
					t.Fatalf("%s: [%d, %d] = %v, want %v", where, i, j, v, ref)
				}
			}
		}
	}
}

func toFloat64(v any) float64 {
	if f, ok := v.(float32); ok {
		return float64(f)
	}
	return v.(float64)
}
