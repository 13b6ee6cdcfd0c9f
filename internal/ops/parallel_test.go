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

// TestCrossEntropyMultiCore: at N = 8192 rows of V = 64 (above
// parallelMinWork, so rows are split over the cores) the float32 loss is
// within 1e-5 relative of refCE and its gradient within 1e-10 absolute of
// (softmax - onehot) * mask / sum(mask) in float64, with a quarter of the
// rows unscored (entries are ~1/6000: 1e-10 is ~1e-6 relative); two runs
// give the same loss bit for bit.
func TestCrossEntropyMultiCore(t *testing.T) {
	const n, v = 8192, 64
	rng := rand.New(rand.NewPCG(25, 26))
	logits := graphtest.RandDense(rng, 3, n, v)
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
	l := graphtest.Param(g, "logits", graphtest.ToF32(logits))
	tg := gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(n), gorgonia.WithName("targets"),
		gorgonia.WithValue(tensor.New(tensor.WithShape(n), tensor.WithBacking(targets))))
	m := graphtest.Param(g, "mask", graphtest.ToF32(tensor.New(tensor.WithShape(n), tensor.WithBacking(mask))))
	loss := graphtest.Must(t)(CrossEntropy(l, tg, m))
	eval, grads := graphtest.Gradients(t, g, loss, gorgonia.Nodes{l})
	first := graphtest.Values(t, loss)[0]
	if again := eval(); again != first {
		t.Errorf("second run's loss %v differs from the first's %v", again, first)
	}
	lv := graphtest.ToF32(logits) // the float32 logits the graph saw, as float64
	l64 := make([]float64, n*v)
	for i, x := range lv.Float32s() {
		l64[i] = float64(x)
	}
	if want := refCE(l64, v, targets, mask); math.Abs(first-want) > 1e-5*math.Abs(want) {
		t.Errorf("loss %v, reference %v", first, want)
	}
	dl := grads[0]
	for r := 0; r < n; r++ {
		row := l64[r*v : (r+1)*v]
		maxv, sum := refExpSum(row)
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

// TestLayerNormMultiCore: at N = 4096 rows of D = 64 (above
// parallelMinWork, so rows are split over the cores) the float32 LayerNorm
// and the gradients of sum(c * ln(x)) equal plain float64 loops over the
// same float32 inputs: y within 2e-5 absolute (entries are O(1)), dx within
// 1e-6 of 1 + |dx| (rows of spread 0.01 have dx ~100; measured 6e-8; a mean
// rounded to float32 before x - mean gave 8e-4), dweight and dbias
// (float32 sums over 4096 rows) within 2e-5 of the sum of their terms'
// magnitudes. Rows have
// means up to 10 and spreads from 0.01 to 10, so a one-pass variance would
// fail the tolerance.
func TestLayerNormMultiCore(t *testing.T) {
	const n, d, eps = 4096, 64, 1e-5
	rng := rand.New(rand.NewPCG(27, 28))
	x32 := make([]float32, n*d)
	for r := 0; r < n; r++ {
		mean, spread := 20*rng.Float64()-10, math.Pow(10, 3*rng.Float64()-2)
		for j := 0; j < d; j++ {
			x32[r*d+j] = float32(mean + spread*rng.NormFloat64())
		}
	}
	w32, b32, c32 := make([]float32, d), make([]float32, d), make([]float32, n*d)
	for j := range w32 {
		w32[j], b32[j] = float32(1+0.5*rng.NormFloat64()), float32(0.5*rng.NormFloat64())
	}
	for i := range c32 {
		c32[i] = float32(rng.NormFloat64())
	}
	g := gorgonia.NewGraph()
	dense := func(name string, v []float32, shape ...int) *gorgonia.Node {
		return graphtest.Param(g, name, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v)))
	}
	x, w, b, c := dense("x", x32, n, d), dense("ln.weight", w32, d), dense("ln.bias", b32, d), dense("c", c32, n, d)
	y := graphtest.Must(t)(LayerNorm(x, w, b, eps))
	loss := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, c))))
	grads, err := gorgonia.Grad(loss, x, w, b)
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Run(t, g)

	wantY, wantDX := make([]float64, n*d), make([]float64, n*d)
	wantDW, wantDB := make([]float64, d), make([]float64, d)
	absDW, absDB := make([]float64, d), make([]float64, d) // sums of |term|: float32 sums over rows round relative to these
	for r := 0; r < n; r++ {
		row := x32[r*d : (r+1)*d]
		var mean, variance float64
		for _, v := range row {
			mean += float64(v) / d
		}
		for _, v := range row {
			variance += (float64(v) - mean) * (float64(v) - mean) / d
		}
		rstd := 1 / math.Sqrt(variance+eps)
		xhat, gy := make([]float64, d), make([]float64, d)
		var m1, m2 float64
		for j, v := range row {
			xhat[j] = (float64(v) - mean) * rstd
			wantY[r*d+j] = xhat[j]*float64(w32[j]) + float64(b32[j])
			dy := float64(c32[r*d+j])
			wantDW[j] += dy * xhat[j]
			wantDB[j] += dy
			absDW[j] += math.Abs(dy * xhat[j])
			absDB[j] += math.Abs(dy)
			gy[j] = dy * float64(w32[j])
			m1 += gy[j] / d
			m2 += gy[j] * xhat[j] / d
		}
		for j := range row {
			wantDX[r*d+j] = rstd * (gy[j] - m1 - xhat[j]*m2)
		}
	}
	if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, y), wantY); e > 2e-5 {
		t.Errorf("y differs from float64 loops by %.3g", e)
	}
	dx := graphtest.Values(t, grads[0])
	worst := 0.0
	for i, want := range wantDX {
		worst = max(worst, math.Abs(dx[i]-want)/(1+math.Abs(want)))
	}
	if worst > 1e-6 {
		t.Errorf("dx differs from float64 loops by %.3g of 1 + |dx|", worst)
	}
	for i, want := range [][]float64{wantDW, wantDB} {
		got, abs := graphtest.Values(t, grads[i+1]), [][]float64{absDW, absDB}[i]
		for j := range want {
			if math.Abs(got[j]-want[j]) > 2e-5*abs[j] {
				t.Errorf("grad %d [%d] = %v, float64 loops %v (sum of |terms| %v)", i+1, j, got[j], want[j], abs[j])
			}
		}
	}
}

// TestLayerNormGradientNeedsItsForward: the gradient parts read the row
// statistics their forward kept, so run without a forward of the same rows
// they fail with an error naming both row counts instead of reading stale
// or missing rows.
func TestLayerNormGradientNeedsItsForward(t *testing.T) {
	x := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(make([]float64, 12)))
	w := tensor.New(tensor.WithShape(4), tensor.WithBacking([]float64{1, 1, 1, 1}))
	dy := tensor.New(tensor.WithShape(3, 4), tensor.WithBacking(make([]float64, 12)))
	stats := &rowStatsBuf{}
	stats.resize(2) // a forward of 2 rows
	for _, part := range []lnPart{lnGradX, lnGradW} {
		o := newOp(layerNormDef{part, 1e-5, stats})
		_, err := o.Do(x, w, dy)
		if err == nil || !strings.Contains(err.Error(), "statistics of 2 rows, x has 3") {
			t.Errorf("%v: err %v, want both row counts named", o.def, err)
		}
	}
}
