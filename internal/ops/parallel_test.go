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
// parallelMinWork, so rows are split over the cores) the float32 LayerNorm,
// the LayerNorm without bias and the RMSNorm, and the gradients of
// sum(c * ln(x)), equal plain float64 loops over the same float32 inputs:
// y within 2e-5 absolute (entries are O(1)), dx within 1e-6 of 1 + |dx|
// (rows of spread 0.01 have dx ~100; measured 6e-8; a mean rounded to
// float32 before x - mean gave 8e-4), dweight and dbias (float32 sums over
// 4096 rows) within 2e-5 of the sum of their terms' magnitudes. Rows have
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
	for _, kind := range []normKind{normBiased, normNoBias, normRMS} {
		t.Run(layerNormDef{kind: kind, eps: eps}.String(), func(t *testing.T) {
			g := gorgonia.NewGraph()
			dense := func(name string, v []float32, shape ...int) *gorgonia.Node {
				return graphtest.Param(g, name, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v)))
			}
			x, w, c := dense("x", x32, n, d), dense("ln.weight", w32, d), dense("c", c32, n, d)
			wrt := gorgonia.Nodes{x, w}
			var y *gorgonia.Node
			switch kind {
			case normBiased:
				b := dense("ln.bias", b32, d)
				y, wrt = graphtest.Must(t)(LayerNorm(x, w, b, eps)), append(wrt, b)
			case normNoBias:
				y = graphtest.Must(t)(LayerNorm(x, w, nil, eps))
			case normRMS:
				y = graphtest.Must(t)(RMSNorm(x, w, eps))
			}
			loss := graphtest.Must(t)(gorgonia.Sum(graphtest.Must(t)(gorgonia.HadamardProd(y, c))))
			grads, err := gorgonia.Grad(loss, wrt...)
			if err != nil {
				t.Fatal(err)
			}
			graphtest.Run(t, g)
			want := normLoops(kind, x32, w32, b32, c32, d, eps)
			if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, y), want.y); e > 2e-5 {
				t.Errorf("y differs from float64 loops by %.3g", e)
			}
			dx := graphtest.Values(t, grads[0])
			worst := 0.0
			for i, want := range want.dx {
				worst = max(worst, math.Abs(dx[i]-want)/(1+math.Abs(want)))
			}
			if worst > 1e-6 {
				t.Errorf("dx differs from float64 loops by %.3g of 1 + |dx|", worst)
			}
			for i, sums := range want.params[:len(wrt)-1] {
				got := graphtest.Values(t, grads[i+1])
				for j := range sums.sum {
					if math.Abs(got[j]-sums.sum[j]) > 2e-5*sums.abs[j] {
						t.Errorf("grad %d [%d] = %v, float64 loops %v (sum of |terms| %v)", i+1, j, got[j], sums.sum[j], sums.abs[j])
					}
				}
			}
		})
	}
}

// normSums is a gradient summed over rows: the sum, and the sum of its
// terms' magnitudes (float32 sums over rows round relative to these).
type normSums struct{ sum, abs []float64 }

// normRef is what normLoops computes.
type normRef struct {
	y, dx  []float64
	params [2]normSums // dweight, dbias
}

// normLoops is a float64 reference of a norm of kind and of the gradients
// of sum(c * norm(x)).
func normLoops(kind normKind, x, w, b, c []float32, d int, eps float64) (ref normRef) {
	n := len(x) / d
	ref.y, ref.dx = make([]float64, n*d), make([]float64, n*d)
	for i := range ref.params {
		ref.params[i] = normSums{make([]float64, d), make([]float64, d)}
	}
	for r := 0; r < n; r++ {
		row := x[r*d : (r+1)*d]
		var mean, variance float64
		if kind != normRMS {
			for _, v := range row {
				mean += float64(v) / float64(d)
			}
		}
		for _, v := range row {
			variance += (float64(v) - mean) * (float64(v) - mean) / float64(d)
		}
		rstd := 1 / math.Sqrt(variance+eps)
		xhat, gy := make([]float64, d), make([]float64, d)
		var m1, m2 float64
		for j, v := range row {
			xhat[j] = (float64(v) - mean) * rstd
			ref.y[r*d+j] = xhat[j] * float64(w[j])
			if kind == normBiased {
				ref.y[r*d+j] += float64(b[j])
			}
			dy := float64(c[r*d+j])
			for i, term := range []float64{dy * xhat[j], dy} {
				ref.params[i].sum[j] += term
				ref.params[i].abs[j] += math.Abs(term)
			}
			gy[j] = dy * float64(w[j])
			if kind != normRMS {
				m1 += gy[j] / float64(d)
			}
			m2 += gy[j] * xhat[j] / float64(d)
		}
		for j := range row {
			ref.dx[r*d+j] = rstd * (gy[j] - m1 - xhat[j]*m2)
		}
	}
	return ref
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
		o := newOp(layerNormDef{part: part, eps: 1e-5, stats: stats})
		_, err := o.Do(x, w, dy)
		if err == nil || !strings.Contains(err.Error(), "statistics of 2 rows, x has 3") {
			t.Errorf("%v: err %v, want both row counts named", o.def, err)
		}
	}
}
