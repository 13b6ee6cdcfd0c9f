package layers

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestAdd: Add(a, b) is the element-wise sum, d sum(c*(a+b))/da = c and the
// same for b (exact), and Add(a, a) gets twice the gradient; two runs give
// the same values (the output buffer is reused).
func TestAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	av, bv, cv := randDense(rng, 1, 3, 4), randDense(rng, 1, 3, 4), randDense(rng, 1, 3, 4)
	g := gorgonia.NewGraph()
	a, b, c := NewParam(g, "a", av), NewParam(g, "b", bv), NewParam(g, "c", cv)
	sum := must(t)(Add(a, b))
	twice := must(t)(Add(a, a))
	cost := must(t)(gorgonia.Sum(must(t)(gorgonia.HadamardProd(must(t)(Add(sum, twice)), c))))
	grads, err := gorgonia.Grad(cost, a, b)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	for run := 0; run < 2; run++ {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		want, wantDA := make([]float64, 12), make([]float64, 12)
		for i := range want {
			want[i] = av.Float64s()[i] + bv.Float64s()[i]
			wantDA[i] = 3 * cv.Float64s()[i]
		}
		if e := maxAbsDiff(t, values(t, sum), want); e != 0 {
			t.Errorf("run %d: a + b off by %.3g", run, e)
		}
		if e := maxAbsDiff(t, values(t, grads[0]), wantDA); e != 0 {
			t.Errorf("run %d: gradient of a off by %.3g", run, e)
		}
		if e := maxAbsDiff(t, values(t, grads[1]), cv.Float64s()); e != 0 {
			t.Errorf("run %d: gradient of b off by %.3g", run, e)
		}
	}
	if _, err := Add(a, NewParam(g, "d", randDense(rng, 1, 4, 3))); err == nil {
		t.Error("shapes (3, 4) and (4, 3) accepted")
	}
}

// TestEmbeddingRejectsOutOfRangeID: unlike gorgonia.ByIndices, an id
// outside the table fails the run and the error names it and its position.
func TestEmbeddingRejectsOutOfRangeID(t *testing.T) {
	g := gorgonia.NewGraph()
	table := NewParam(g, "emb", tensor.New(tensor.WithShape(3, 2), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6})))
	ids := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(3), gorgonia.WithName("ids"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(3), tensor.WithBacking([]int{2, 7, 0}))))
	emb, err := NewEmbedding(table)
	if err != nil {
		t.Fatal(err)
	}
	must(t)(emb.Forward(ids))
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	err = vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "id 7 at position 1") {
		t.Errorf("error %v, want one naming id 7 at position 1", err)
	}
}
