package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// adamCase is one call of Adam on float32 weights and gradients.
type adamCase struct {
	w, g []float32
	m, v []float64 // a few values longer than w: those must stay as they are
	s    AdamStep
}

// adamSpare is how many values m and v have past len(w).
const adamSpare = 3

// adamCases are lengths 1 to 40 and a few hundred, with shrink 1 and below
// 1, on values of every scale: gradients from float32's subnormals to near
// its largest value, zeros of both signs, second moments from float64's
// subnormals up, and some weights infinite, NaN, or at float32's largest
// value so that the step overflows it.
func adamCases() []adamCase {
	rng := rand.New(rand.NewPCG(11, 12))
	// Variables, so that 1-beta is the float64 subtraction Adam does.
	b1, b2, eps := 0.9, 0.999, 1e-8
	scaled := func(lo, hi int) float64 {
		return rng.NormFloat64() * math.Pow(10, float64(lo+rng.IntN(hi-lo+1)))
	}
	var cases []adamCase
	lengths := []int{256, 301, 515}
	for n := 1; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, shrink := range []float64{1, 1 - 3e-2*0.1} {
			c := adamCase{w: make([]float32, n), g: make([]float32, n), m: make([]float64, n+adamSpare), v: make([]float64, n+adamSpare)}
			for j := range n {
				c.w[j] = float32(scaled(-3, 1))
				switch rng.IntN(8) {
				case 0:
					c.g[j] = 0
				case 1:
					c.g[j] = float32(math.Copysign(0, -1))
				case 2:
					c.g[j] = float32(scaled(-44, -38)) // subnormal or tiny float32
				case 3:
					c.g[j] = float32(scaled(30, 37))
				default:
					c.g[j] = float32(scaled(-8, 0))
				}
				switch rng.IntN(6) {
				case 0: // a first step: zero moments
				case 1:
					c.m[j], c.v[j] = scaled(-310, -300), math.Abs(scaled(-320, -308))
				default:
					c.m[j], c.v[j] = scaled(-6, 0), math.Abs(scaled(-12, 0))
				}
			}
			for j := n; j < n+adamSpare; j++ {
				c.m[j], c.v[j] = -7, -7
			}
			t := float64(1 + rng.IntN(1000))
			lr := 1e-3 * math.Pow(10, float64(rng.IntN(3)))
			c.s = AdamStep{Beta1: b1, Beta2: b2, Eps: eps, Bias2Sqrt: math.Sqrt(1 - math.Pow(b2, t)), StepSize: lr / (1 - math.Pow(b1, t)), Shrink: shrink}
			cases = append(cases, c)
			if n%5 == 0 || n > 40 {
				// The same with a non-finite result somewhere.
				d := adamCase{w: append([]float32(nil), c.w...), g: append([]float32(nil), c.g...), m: c.m, v: c.v, s: c.s}
				j := rng.IntN(n)
				switch rng.IntN(3) {
				case 0:
					d.w[j] = float32(math.Inf(1 - 2*rng.IntN(2)))
				case 1:
					d.w[j] = float32(math.NaN())
				case 2:
					// A step of 1e37 or more past float32's largest value.
					d.w[j], d.g[j], d.s.StepSize = math.MaxFloat32, -1e30, 1e38
				}
				cases = append(cases, d)
			}
		}
	}
	// Ties: a rounding of the float64 step changes the float32 weight only
	// near a float32 rounding boundary, which random values hardly ever
	// meet. Here the new weight is exactly halfway between two float32s and
	// every intermediate is exact in the formula's order (beta 0.5, eps 0,
	// g 0, so m = half, sqrt(v) = 49, step size 49), so an order that
	// rounds somewhere, such as 49*(m/49) (7% of these), often lands on the
	// other side.
	for _, n := range []int{256, 259} {
		c := adamCase{w: make([]float32, n), g: make([]float32, n), m: make([]float64, n+adamSpare), v: make([]float64, n+adamSpare)}
		for j := range n {
			half := (float64(1<<23+rng.IntN(1<<23)) + 0.5) * math.Pow(2, float64(rng.IntN(40)-43))
			c.m[j], c.v[j] = 2*half, 2*49*49
		}
		for j := n; j < n+adamSpare; j++ {
			c.m[j], c.v[j] = -7, -7
		}
		half := 0.5
		c.s = AdamStep{Beta1: half, Beta2: half, Eps: 0, Bias2Sqrt: 1, StepSize: 49, Shrink: 1}
		cases = append(cases, c)
	}
	return cases
}

// adamResult is what Adam leaves: the weights, the moments and its report.
type adamResult struct {
	w      []float32
	m, v   []float64
	finite bool
}

func adamRun(c adamCase) adamResult {
	r := adamResult{w: append([]float32(nil), c.w...), m: append([]float64(nil), c.m...), v: append([]float64(nil), c.v...)}
	r.finite = Adam(r.w, c.g, r.m, r.v, c.s)
	return r
}

// TestAdamSameBitsOnEveryPath: Adam on float32 weights and gradients gives
// the generic Go loop's weights and moments bit for bit on every path (the
// assembly does the loop's operations in its order, none fused), for every
// length from 1 to 40 (whole groups of four and tails) and a few hundred;
// the report of finiteness is the same and true exactly when every new
// weight is finite; and the generic path equals the formula written out
// here. The moments past len(w) stay untouched.
func TestAdamSameBitsOnEveryPath(t *testing.T) {
	defer setPath(active)
	cases := adamCases()
	setPath(Generic)
	want := make([]adamResult, len(cases))
	nonFinite := 0
	for i, c := range cases {
		want[i] = adamRun(c)
		r := adamFormula(c)
		name := fmt.Sprintf("case %d, n=%d", i, len(c.w))
		compareAdam(t, "generic vs formula, "+name, want[i], r)
		finite := true
		for _, x := range want[i].w {
			finite = finite && !math.IsInf(float64(x), 0) && !math.IsNaN(float64(x))
		}
		if want[i].finite != finite {
			t.Errorf("generic, %s: reports finite %v, weights finite %v", name, want[i].finite, finite)
		}
		if !finite {
			nonFinite++
		}
		for j := len(c.w); j < len(c.m); j++ {
			if want[i].m[j] != -7 || want[i].v[j] != -7 {
				t.Fatalf("generic, %s: moments past len(w) written", name)
			}
		}
	}
	if nonFinite < 10 {
		t.Fatalf("only %d cases with a non-finite weight", nonFinite)
	}
	for _, p := range testPaths(t)[1:] {
		setPath(p)
		for i, c := range cases {
			compareAdam(t, fmt.Sprintf("%s, case %d, n=%d, shrink %v", p, i, len(c.w), c.s.Shrink), adamRun(c), want[i])
		}
	}
}

// adamFormula is the update written out once more, element by element.
func adamFormula(c adamCase) adamResult {
	r := adamResult{w: append([]float32(nil), c.w...), m: append([]float64(nil), c.m...), v: append([]float64(nil), c.v...), finite: true}
	s := c.s
	for j := range r.w {
		g := float64(c.g[j])
		r.m[j] = s.Beta1*r.m[j] + (1-s.Beta1)*g
		r.v[j] = s.Beta2*r.v[j] + (1-s.Beta2)*g*g
		r.w[j] = float32(float64(r.w[j])*s.Shrink - s.StepSize*r.m[j]/(math.Sqrt(r.v[j])/s.Bias2Sqrt+s.Eps))
		if math.IsInf(float64(r.w[j]), 0) || math.IsNaN(float64(r.w[j])) {
			r.finite = false
		}
	}
	return r
}

func compareAdam(t *testing.T, name string, got, want adamResult) {
	t.Helper()
	if got.finite != want.finite {
		t.Errorf("%s: finite %v, want %v", name, got.finite, want.finite)
	}
	for j := range got.w {
		if math.Float32bits(got.w[j]) != math.Float32bits(want.w[j]) {
			t.Errorf("%s: w[%d] = %v (%#x), want %v (%#x)", name, j, got.w[j], math.Float32bits(got.w[j]), want.w[j], math.Float32bits(want.w[j]))
			return
		}
	}
	for j := range got.m {
		if math.Float64bits(got.m[j]) != math.Float64bits(want.m[j]) || math.Float64bits(got.v[j]) != math.Float64bits(want.v[j]) {
			t.Errorf("%s: m, v[%d] = %v %v, want %v %v", name, j, got.m[j], got.v[j], want.m[j], want.v[j])
			return
		}
	}
}

// TestAdamFloat32MomentsSameBitsOnEveryPath: with float32 moments, Adam
// gives the formula written out below bit for bit on every path: each
// moment widened, updated in float64 and rounded once when stored, the
// weight's step taken from the moments before that rounding. The cases are
// adamCases' with their moments rounded to float32 (subnormal float64
// moments become zeros). The moments past len(w) stay untouched, and the
// result differs from the float64 moments' only by those roundings: within
// 1e-6 relative of it on every finite weight of the cases that start from
// zero moments.
func TestAdamFloat32MomentsSameBitsOnEveryPath(t *testing.T) {
	defer setPath(active)
	for _, p := range testPaths(t) {
		setPath(p)
		for i, c := range adamCases() {
			name := fmt.Sprintf("%s, case %d, n=%d", p, i, len(c.w))
			m, v := narrow(c.m), narrow(c.v)
			w := append([]float32(nil), c.w...)
			wantW, wantM, wantV, wantFinite := adamFormula32(c.w, c.g, m, v, c.s)
			if finite := Adam(w, c.g, m, v, c.s); finite != wantFinite {
				t.Errorf("%s: finite %v, want %v", name, finite, wantFinite)
			}
			for j := range m {
				if j < len(w) && math.Float32bits(w[j]) != math.Float32bits(wantW[j]) {
					t.Fatalf("%s: w[%d] = %v, want %v", name, j, w[j], wantW[j])
				}
				if math.Float32bits(m[j]) != math.Float32bits(wantM[j]) || math.Float32bits(v[j]) != math.Float32bits(wantV[j]) {
					t.Fatalf("%s: m, v[%d] = %v %v, want %v %v", name, j, m[j], v[j], wantM[j], wantV[j])
				}
			}
		}
	}
	// From zero moments, the two dtypes differ only by the final rounding.
	c := adamCases()[0]
	w64, w32 := append([]float32(nil), c.w...), append([]float32(nil), c.w...)
	n := len(c.w) + adamSpare
	Adam(w64, c.g, make([]float64, n), make([]float64, n), c.s)
	Adam(w32, c.g, make([]float32, n), make([]float32, n), c.s)
	for j := range w64 {
		if d := math.Abs(float64(w32[j]) - float64(w64[j])); d > 1e-6*math.Abs(float64(w64[j])) {
			t.Errorf("w[%d] = %v with float32 moments, %v with float64 ones", j, w32[j], w64[j])
		}
	}
}

// narrow rounds x to float32.
func narrow(x []float64) []float32 {
	y := make([]float32, len(x))
	for j, v := range x {
		y[j] = float32(v)
	}
	return y
}

// adamFormula32 is the update with float32 moments written out once more,
// element by element, on copies of w, m and v.
func adamFormula32(w0, g []float32, m0, v0 []float32, s AdamStep) (w, m, v []float32, finite bool) {
	w, m, v = append([]float32(nil), w0...), append([]float32(nil), m0...), append([]float32(nil), v0...)
	finite = true
	for j := range w {
		gj := float64(g[j])
		mj := s.Beta1*float64(m[j]) + (1-s.Beta1)*gj
		vj := s.Beta2*float64(v[j]) + (1-s.Beta2)*gj*gj
		m[j], v[j] = float32(mj), float32(vj)
		w[j] = float32(float64(w[j])*s.Shrink - s.StepSize*mj/(math.Sqrt(vj)/s.Bias2Sqrt+s.Eps))
		finite = finite && !math.IsInf(float64(w[j]), 0) && !math.IsNaN(float64(w[j]))
	}
	return w, m, v, finite
}
