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

// lnResult is everything the row kernels give for one case.
type lnResult struct {
	mean, rstd float64
	y, dx, dw  []float32
}

func lnRun(c lnCase) lnResult {
	n := len(c.x)
	r := lnResult{y: make([]float32, n), dx: make([]float32, n), dw: make([]float32, n)}
	r.mean, r.rstd = LayerNormStats(c.x, 1e-5)
	LayerNormRow(c.x, c.w, c.b, r.mean, r.rstd, r.y)
	LayerNormGradRow(c.x, c.w, c.dy, r.mean, r.rstd, r.dx)
	copy(r.dw, c.dy) // something to add to
	LayerNormGradWRow(c.x, c.dy, r.mean, r.rstd, r.dw)
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
			if got.mean != want[i].mean || got.rstd != want[i].rstd {
				t.Errorf("%s: mean, rstd %v %v, generic %v %v", name, got.mean, got.rstd, want[i].mean, want[i].rstd)
			}
			for _, v := range []struct {
				what      string
				got, want []float32
			}{{"y", got.y, want[i].y}, {"dx", got.dx, want[i].dx}, {"dw", got.dw, want[i].dw}} {
				for j := range v.got {
					if math.Float32bits(v.got[j]) != math.Float32bits(v.want[j]) {
						t.Errorf("%s: %s[%d] = %v, generic %v", name, v.what, j, v.got[j], v.want[j])
						break
					}
				}
			}
		}
	}
}

// TestLayerNormRowsMatchReference: on every path, the float32 row kernels
// equal a plain two-pass float64 LayerNorm and its gradients (one sum per
// quantity, no lanes), rounded to float32: y, dx and dw within 8 float32
// ulps of their scale (the value's magnitude, at least 1; for dx, rstd),
// mean and rstd within 1e-12 relative.
func TestLayerNormRowsMatchReference(t *testing.T) { forEachPath(t, testLayerNormRowsMatchReference) }

func testLayerNormRowsMatchReference(t *testing.T) {
	for _, c := range lnCases() {
		n := float64(len(c.x))
		mean := 0.0
		for _, v := range c.x {
			mean += float64(v)
		}
		mean /= n
		variance := 0.0
		for _, v := range c.x {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		rstd := 1 / math.Sqrt(variance/n+1e-5)
		var gMean, gxMean float64
		for j, v := range c.x {
			g := float64(c.dy[j]) * float64(c.w[j])
			gMean += g / n
			gxMean += g * (float64(v) - mean) * rstd / n
		}
		got := lnRun(c)
		name := fmt.Sprintf("n=%d, mean %.0f", len(c.x), c.x[0])
		if math.Abs(got.mean-mean) > 1e-12*max(1, math.Abs(mean)) || math.Abs(got.rstd-rstd) > 1e-12*rstd {
			t.Errorf("%s: mean, rstd %v %v, reference %v %v", name, got.mean, got.rstd, mean, rstd)
		}
		const ulps = 2.0 / (1 << 23)
		for j, v := range c.x {
			xhat := (float64(v) - mean) * rstd
			y := xhat*float64(c.w[j]) + float64(c.b[j])
			g := float64(c.dy[j]) * float64(c.w[j])
			dx := rstd * (g - gMean - xhat*gxMean)
			dw := float64(c.dy[j]) + float64(c.dy[j])*xhat
			for _, q := range []struct {
				what      string
				got, want float64
				scale     float64
			}{{"y", float64(got.y[j]), y, max(1, math.Abs(y))}, {"dx", float64(got.dx[j]), dx, max(1, rstd)}, {"dw", float64(got.dw[j]), dw, max(1, math.Abs(dw))}} {
				if math.Abs(q.got-q.want) > ulps*q.scale*4 {
					t.Errorf("%s: %s[%d] = %v, reference %v", name, q.what, j, q.got, q.want)
				}
			}
		}
	}
}
