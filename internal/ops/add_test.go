package ops

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestAdd: Add(a, b) is the element-wise sum, d sum(c*(a+b))/da = c and the
// same for b (exact), and Add(a, a) gets twice the gradient; two runs give
// the same values (the output buffer is reused).
func TestAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	av, bv, cv := graphtest.RandDense(rng, 1, 3, 4), graphtest.RandDense(rng, 1, 3, 4), graphtest.RandDense(rng, 1, 3, 4)
	g := gorgonia.NewGraph()
	a, b, c := graphtest.Param(g, "a", av), graphtest.Param(g, "b", bv), graphtest.Param(g, "c", cv)
	sum := graphtest.Must(t)(Add(a, b))
	twice := graphtest.Must(t)(Add(a, a))
	cost := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(graphtest.Must(t)(Add(sum, twice)), c))))
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
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, sum), want); e != 0 {
			t.Errorf("run %d: a + b off by %.3g", run, e)
		}
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, grads[0]), wantDA); e != 0 {
			t.Errorf("run %d: gradient of a off by %.3g", run, e)
		}
		if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, grads[1]), cv.Float64s()); e != 0 {
			t.Errorf("run %d: gradient of b off by %.3g", run, e)
		}
	}
	if _, err := Add(a, graphtest.Param(g, "d", graphtest.RandDense(rng, 1, 4, 3))); err == nil {
		t.Error("shapes (3, 4) and (4, 3) accepted")
	}
}
