package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// ceGraph builds CrossEntropy on named inputs and returns the graph, the
// logits node and the loss node.
func ceGraph(t *testing.T, logits *tensor.Dense, targets []int, mask *tensor.Dense) (*gorgonia.ExprGraph, *gorgonia.Node, *gorgonia.Node) {
	t.Helper()
	g := gorgonia.NewGraph()
	l := graphtest.Param(g, "logits", logits)
	tg := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(len(targets)), gorgonia.WithName("targets"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(targets)), tensor.WithBacking(targets))))
	loss, err := CrossEntropy(l, tg, graphtest.Param(g, "mask", mask))
	if err != nil {
		t.Fatal(err)
	}
	return g, l, loss
}

// refExpSum returns the row's max and sum_j exp(row[j] - max), so that
// softmax(row)[j] = exp(row[j] - max) / sum.
func refExpSum(row []float64) (maxv, sum float64) {
	maxv = math.Inf(-1)
	for _, x := range row {
		maxv = math.Max(maxv, x)
	}
	for _, x := range row {
		sum += math.Exp(x - maxv)
	}
	return maxv, sum
}

// refCE is the textbook masked mean of -log softmax(row)[target], with the
// softmax taken through the row max.
func refCE(logits []float64, v int, targets []int, mask []float64) float64 {
	var total, count float64
	for n, tg := range targets {
		row := logits[n*v : (n+1)*v]
		maxv, sum := refExpSum(row)
		total += mask[n] * (maxv + math.Log(sum) - row[tg])
		count += mask[n]
	}
	return total / count
}

// TestCrossEntropyMatchesReference: float64 within 1e-12 and float32 within
// 1e-5 (relative) of refCE, on logits of std 1 and 1e3 (finite either way).
func TestCrossEntropyMatchesReference(t *testing.T) {
	const n, v = 6, 5
	targets := []int{0, 4, 2, 2, 1, 3}
	mask := []float64{1, 0, 1, 1, 0, 1}
	for _, std := range []float64{1, 1e3} {
		rng := rand.New(rand.NewPCG(21, uint64(std)))
		lv := graphtest.RandDense(rng, std, n, v)
		want := refCE(lv.Float64s(), v, targets, mask)
		maskT := tensor.New(tensor.WithShape(n), tensor.WithBacking(mask))
		g, _, loss := ceGraph(t, lv, targets, maskT)
		graphtest.Run(t, g)
		if got := graphtest.Values(t, loss)[0]; math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("std %g float64: loss %v, reference %v", std, got, want)
		}
		l32 := graphtest.ToF32(lv)
		want32 := refCE(graphtest.Float64s(t, "logits", l32), v, targets, mask)
		g, _, loss = ceGraph(t, l32, targets, graphtest.ToF32(maskT))
		graphtest.Run(t, g)
		if got := graphtest.Values(t, loss)[0]; math.IsNaN(got) || math.Abs(got-want32) > 1e-5*math.Max(1, math.Abs(want32)) {
			t.Errorf("std %g float32: loss %v, reference %v", std, got, want32)
		}
	}
}

// TestCrossEntropyGradient compares the gradient with central differences
// (h = 1e-6); tolerance max abs difference 1e-9. It also checks unscored rows
// get exactly zero gradient.
func TestCrossEntropyGradient(t *testing.T) {
	const n, v = 4, 6
	rng := rand.New(rand.NewPCG(22, 23))
	lv := graphtest.RandDense(rng, 2, n, v)
	targets := []int{5, 0, 3, 3}
	mask := []float64{1, 1, 0, 1}
	g, l, loss := ceGraph(t, lv, targets, tensor.New(tensor.WithShape(n), tensor.WithBacking(mask)))
	grads, err := gorgonia.Grad(loss, l)
	if err != nil {
		t.Fatal(err)
	}
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	analytic := append([]float64(nil), graphtest.Values(t, grads[0])...)
	const step = 1e-6
	ld := lv.Float64s()
	fd := make([]float64, len(ld))
	for i := range ld {
		w := ld[i]
		ld[i] = w + step
		up := refCE(ld, v, targets, mask)
		ld[i] = w - step
		down := refCE(ld, v, targets, mask)
		ld[i] = w
		fd[i] = (up - down) / (2 * step)
	}
	if e := graphtest.MaxAbsDiff(t, analytic, fd); e > 1e-9 {
		t.Errorf("cross-entropy gradient differs from finite differences by %.3g", e)
	}
	for j := 2 * v; j < 3*v; j++ {
		if analytic[j] != 0 {
			t.Fatalf("unscored row has gradient %v", analytic[2*v:3*v])
		}
	}
}

// TestCrossEntropyEdgeCases: nothing scored gives loss 0 (not NaN); a target
// outside [0, V) fails the run naming the target and position.
func TestCrossEntropyEdgeCases(t *testing.T) {
	lv := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]float64{1, 2, 3, 4, 5, 6}))
	g, _, loss := ceGraph(t, lv, []int{0, 1}, tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{0, 0})))
	graphtest.Run(t, g)
	if got := graphtest.Values(t, loss)[0]; got != 0 {
		t.Errorf("loss with nothing scored = %v, want 0", got)
	}
	g, _, _ = ceGraph(t, lv, []int{0, 3}, tensor.New(tensor.WithShape(2), tensor.WithBacking([]float64{1, 1})))
	vm := gorgonia.NewTapeMachine(g)
	defer vm.Close()
	err := vm.RunAll()
	if err == nil || !strings.Contains(err.Error(), "target 3 at position 1 is outside the vocabulary [0, 3)") {
		t.Errorf("out-of-range target: error %v", err)
	}
}
