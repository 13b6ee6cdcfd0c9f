package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// lnCase is one float32 row with its weight, bias and upstream gradient.
type lnCase struct{ x, w, b, dy []float32 }

// lnCases are rows of lengths around the four-lane boundary, of mean 10 and
// spread 0.01 (where x - mean in float32 would lose digits) and of mean 0.
func lnCases() []lnCase {
	rng := rand.New(rand.NewPCG(7, 8))
	var cases []lnCase
	for _, n := range []int{1, 3, 4, 5, 8, 13, 64, 67, 256} {
		for _, shift := range []float64{0, 10} {
			c := lnCase{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)}
			for j := range n {
				spread := 1.0
				if shift != 0 {
					spread = 0.01
				}
				c.x[j] = float32(shift + spread*rng.NormFloat64())
				c.w[j] = float32(1 + 0.3*rng.NormFloat64())
				c.b[j] = float32(0.3 * rng.NormFloat64())
				c.dy[j] = float32(rng.NormFloat64())
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// lnResult is everything the row kernels give for one case: the
// statistics, and each output by name (lnOutputs).
type lnResult struct {
	mean, rstd, rmsRstd float64
	out                 map[string][]float32
}

// lnOutputs name the row kernels' outputs: a LayerNorm's y, dx and dw, its
// y without the bias, and an RMSNorm's (mean 0, rstd RMSNormStats') y, dx
// and dw.
var lnOutputs = []string{"y", "dx", "dw", "y without bias", "rms y", "rms dx", "rms dw"}

func lnRun(c lnCase) lnResult {
	r := lnResult{out: map[string][]float32{}}
	for _, name := range lnOutputs {
		r.out[name] = make([]float32, len(c.x))
	}
	r.mean, r.rstd = LayerNormStats(c.x, 1e-5)
	r.rmsRstd = RMSNormStats(c.x, 1e-5)
	LayerNormRow(c.x, c.w, c.b, r.mean, r.rstd, r.out["y"])
	LayerNormRow(c.x, c.w, nil, r.mean, r.rstd, r.out["y without bias"])
	LayerNormGradRow(c.x, c.w, c.dy, r.mean, r.rstd, r.out["dx"])
	LayerNormRow(c.x, c.w, nil, 0, r.rmsRstd, r.out["rms y"])
	RMSNormGradRow(c.x, c.w, c.dy, r.rmsRstd, r.out["rms dx"])
	for _, dw := range []struct {
		name       string
		mean, rstd float64
	}{{"dw", r.mean, r.rstd}, {"rms dw", 0, r.rmsRstd}} {
		copy(r.out[dw.name], c.dy) // something to add to
		LayerNormGradWRow(c.x, c.dy, dw.mean, dw.rstd, r.out[dw.name])
	}
	return r
}

// TestLayerNormRowsSameBitsOnEveryPath: the float32 row kernels give the
// same bits on every kernel path (the assembly does the Go loops'
// operations in their order), for rows whose length is and is not a
// multiple of four.
func TestLayerNormRowsSameBitsOnEveryPath(t *testing.T) {
	defer setPath(active)
	cases := lnCases()
	setPath(Generic)
	var want []lnResult
	for _, c := range cases {
		want = append(want, lnRun(c))
	}
	for _, p := range testPaths(t)[1:] {
		setPath(p)
		for i, c := range cases {
			got := lnRun(c)
			name := fmt.Sprintf("%s, n=%d, mean %.0f", p, len(c.x), c.x[0])
			if got.mean != want[i].mean || got.rstd != want[i].rstd || got.rmsRstd != want[i].rmsRstd {
				t.Errorf("%s: mean, rstd, rms rstd %v %v %v, generic %v %v %v", name, got.mean, got.rstd, got.rmsRstd, want[i].mean, want[i].rstd, want[i].rmsRstd)
			}
			for _, what := range lnOutputs {
				for j, v := range got.out[what] {
					if w := want[i].out[what][j]; math.Float32bits(v) != math.Float32bits(w) {
						t.Errorf("%s: %s[%d] = %v, generic %v", name, what, j, v, w)
						break
					}
				}
			}
		}
	}
}

// TestLayerNormRowsMatchReference: on every path, the float32 row kernels
// equal a plain two-pass float64 LayerNorm, RMSNorm and their gradients
// (one sum per quantity, no lanes), rounded to float32: every output
// within 8 float32 ulps of its scale (the value's magnitude, at least 1;
// for dx, rstd), mean and both rstd within 1e-12 relative.
func TestLayerNormRowsMatchReference(t *testing.T) { forEachPath(t, testLayerNormRowsMatchReference) }

func testLayerNormRowsMatchReference(t *testing.T) {
	for _, c := range lnCases() {
		n := float64(len(c.x))
		mean := 0.0
		for _, v := range c.x {
			mean += float64(v)
		}
		mean /= n
		variance, square := 0.0, 0.0
		for _, v := range c.x {
			variance += (float64(v) - mean) * (float64(v) - mean)
			square += float64(v) * float64(v)
		}
		rstd, rmsRstd := 1/math.Sqrt(variance/n+1e-5), 1/math.Sqrt(square/n+1e-5)
		var gMean, gxMean, gxRMS float64
		for j, v := range c.x {
			g := float64(c.dy[j]) * float64(c.w[j])
			gMean += g / n
			gxMean += g * (float64(v) - mean) * rstd / n
			gxRMS += g * float64(v) * rmsRstd / n
		}
		got := lnRun(c)
		name := fmt.Sprintf("n=%d, mean %.0f", len(c.x), c.x[0])
		if math.Abs(got.mean-mean) > 1e-12*max(1, math.Abs(mean)) || math.Abs(got.rstd-rstd) > 1e-12*rstd || math.Abs(got.rmsRstd-rmsRstd) > 1e-12*rmsRstd {
			t.Errorf("%s: mean, rstd, rms rstd %v %v %v, reference %v %v %v", name, got.mean, got.rstd, got.rmsRstd, mean, rstd, rmsRstd)
		}
		const ulps = 2.0 / (1 << 23)
		for j, v := range c.x {
			xhat, rhat := (float64(v)-mean)*rstd, float64(v)*rmsRstd
			w, dy := float64(c.w[j]), float64(c.dy[j])
			g := dy * w
			own := func(v float64) [2]float64 { return [2]float64{v, max(1, math.Abs(v))} } // scaled by itself
			want := map[string][2]float64{                                                  // value, scale
				"y": own(xhat*w + float64(c.b[j])), "y without bias": own(xhat * w), "dw": own(dy + dy*xhat),
				"dx":    {rstd * (g - gMean - xhat*gxMean), max(1, rstd)},
				"rms y": own(rhat * w), "rms dx": {rmsRstd * (g - rhat*gxRMS), max(1, rmsRstd)}, "rms dw": own(dy + dy*rhat),
			}
			for _, what := range lnOutputs {
				q := want[what]
				if v := float64(got.out[what][j]); math.Abs(v-q[0]) > ulps*q[1]*4 {
					t.Errorf("%s: %s[%d] = %v, reference %v", name, what, j, v, q[0])
				}
			}
		}
	}
}
