package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestCrossEntropyMultiCore: at N = 8192 rows of V = 64 (above
// parallelMinWork, so rows are split over the cores) the float32 loss is
// within 1e-5 relative of refCE and its gradient within 1e-10 absolute of
// (softmax - onehot) * mask / sum(mask) in float64, with a quarter of the
// rows unscored (entries are ~1/6000: 1e-10 is ~1e-6 relative); two runs
// give the same loss bit for bit.
func TestCrossEntropyMultiCore(t *testing.T) {
	const n, v = 8192, 64
	rng := rand.New(rand.NewPCG(25, 26))
	logits := randDense(rng, 3, n, v)
	targets, mask := make([]int, n), make([]float64, n)
	var count float64
	for i := range targets {
		targets[i] = rng.IntN(v)
		if rng.IntN(4) > 0 {
			mask[i] = 1
			count++
		}
	}
	g := gorgonia.NewGraph()
	l := NewParam(g, "logits", toF32(logits))
	tg := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(n), gorgonia.WithName("targets"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(targets))))
	m := NewParam(g, "mask", toF32(tensor.New(tensor.WithShape(n), tensor.WithBacking(mask))))
	loss := must(t)(CrossEntropy(l, tg, m))
	grads, err := gorgonia.Grad(loss, l)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	var first float64
	for run := 0; run < 2; run++ {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		got := values(t, loss)[0]
		if run == 0 {
			first = got
		} else if got != first {
			t.Errorf("second run's loss %v differs from the first's %v", got, first)
		}
	}
	lv := toF32(logits) // the float32 logits the graph saw, as float64
	l64 := make([]float64, n*v)
	for i, x := range lv.Float32s() {
		l64[i] = float64(x)
	}
	if want := refCE(l64, v, targets, mask); math.Abs(first-want) > 1e-5*math.Abs(want) {
		t.Errorf("loss %v, reference %v", first, want)
	}
	dl := values(t, grads[0])
	for r := 0; r < n; r++ {
		row := l64[r*v : (r+1)*v]
		maxv := math.Inf(-1)
		for _, x := range row {
			maxv = math.Max(maxv, x)
		}
		var sum float64
		for _, x := range row {
			sum += math.Exp(x - maxv)
		}
		for j, x := range row {
			want := mask[r] * math.Exp(x-maxv) / sum / count
			if j == targets[r] {
				want -= mask[r] / count
			}
			if e := math.Abs(dl[r*v+j] - want); e > 1e-10 {
				t.Fatalf("gradient [%d, %d] = %v, want %v", r, j, dl[r*v+j], want)
			}
		}
	}
}
