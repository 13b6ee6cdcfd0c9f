package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gemvCase is one GEMV of m rows of A against B (n, k) transposed, with
// leading dimensions wider than the matrices.
type gemvCase struct {
	m, n, k int
	beta    float32
}

// gemvCases cover k below, at and past multiples of the 16 lanes (and 0),
// n around the four rows the kernels take at once and the 16-row blocks,
// every m up to gemvRows, beta 0, 1 and 0.5, and products large enough to
// split over the cores (n*k >= gemvParallelMin).
func gemvCases() []gemvCase {
	var cases []gemvCase
	for _, k := range []int{0, 1, 15, 16, 17, 64, 100, 768} {
		for _, n := range []int{1, 3, 4, 5, 16, 17, 33, 300} {
			for m := 1; m <= gemvRows; m++ {
				for _, beta := range []float32{0, 1, 0.5} {
					cases = append(cases, gemvCase{m, n, k, beta})
				}
			}
		}
	}
	return cases
}

// gemvOperands fills A, B and C of a case (C outside its m x n block too).
func gemvOperands(c gemvCase, rng *rand.Rand) (a, b, cm []float32, lda, ldb, ldc int) {
	lda, ldb, ldc = c.k+3, c.k+5, c.n+2
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	return fill(c.m * lda), fill(c.n * ldb), fill(c.m * ldc), lda, ldb, ldc
}

// TestGemvMatchesReference: on every path, Gemm of at most gemvRows rows
// against a transposed B (the GEMV) equals the float64 triple loop within
// 1e-6 times sum |a||b| per entry and leaves C outside its block alone.
func TestGemvMatchesReference(t *testing.T) { forEachPath(t, testGemvMatchesReference) }

func testGemvMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range gemvCases() {
		a, b, cm, lda, ldb, ldc := gemvOperands(c, rng)
		orig := append([]float32(nil), cm...)
		want, scale := refGemm(false, true, c.m, c.n, c.k, a, lda, b, ldb, c.beta, cm, ldc)
		Gemm(false, true, c.m, c.n, c.k, a, lda, b, ldb, c.beta, cm, ldc)
		for i := 0; i < c.m; i++ {
			for j := 0; j < ldc; j++ {
				got := cm[i*ldc+j]
				if j >= c.n {
					if math.Float32bits(got) != math.Float32bits(orig[i*ldc+j]) {
						t.Fatalf("%+v: C[%d][%d] outside the block changed", c, i, j)
					}
					continue
				}
				if e := math.Abs(float64(got) - want[i*c.n+j]); e > 1e-6*scale[i*c.n+j]+1e-30 {
					t.Fatalf("%+v: C[%d][%d] = %v, want %v (error %.3g, scale %.3g)", c, i, j, got, want[i*c.n+j], e, scale[i*c.n+j])
				}
			}
		}
	}
}

// TestGemvSameBits: on every path the GEMV gives the bits of the order it
// promises, written out here as plain float32 arithmetic: lane p%16 sums
// the rounded products of the whole groups of 16, the lanes fold pairwise
// (l + l+8, l + l+4, l + l+2, l + l+1), the remaining products are added in
// order, then beta C.
func TestGemvSameBits(t *testing.T) { forEachPath(t, testGemvSameBits) }

func testGemvSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, c := range gemvCases() {
		a, b, cm, lda, ldb, ldc := gemvOperands(c, rng)
		want := make([]float32, c.m*c.n)
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				want[i*c.n+j] = lanesDot(a[i*lda:i*lda+c.k], b[j*ldb:j*ldb+c.k])
				if c.beta != 0 {
					want[i*c.n+j] += float32(c.beta * cm[i*ldc+j])
				}
			}
		}
		Gemm(false, true, c.m, c.n, c.k, a, lda, b, ldb, c.beta, cm, ldc)
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				if got, w := cm[i*ldc+j], want[i*c.n+j]; math.Float32bits(got) != math.Float32bits(w) {
					t.Fatalf("%s %+v: C[%d][%d] = %v, want %v bit for bit", Active(), c, i, j, got, w)
				}
			}
		}
	}
}

// lanesDot is the GEMV's dot product in the order it promises.
func lanesDot(x, y []float32) float32 {
	whole := len(x) / 16 * 16
	var lane [16]float32
	for p := 0; p < whole; p++ {
		lane[p%16] += float32(x[p] * y[p])
	}
	var half [8]float32
	for l := range half {
		half[l] = lane[l] + lane[l+8]
	}
	q := [4]float32{half[0] + half[4], half[1] + half[5], half[2] + half[6], half[3] + half[7]}
	s := (q[0] + q[2]) + (q[1] + q[3])
	for p := whole; p < len(x); p++ {
		s += float32(x[p] * y[p])
	}
	return s
}

// TestSum: on every path Sum gives the bits of the GEMV's order (lanesDot
// with a vector of ones: multiplying by one is exact) and the float64 sum
// within 1e-6 of the sum of magnitudes, for lengths around the 16 lanes.
func TestSum(t *testing.T) { forEachPath(t, testSum) }

func testSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for _, n := range []int{0, 1, 15, 16, 17, 33, 64, 1000} {
		x, ones := make([]float32, n), make([]float32, n)
		var want, scale float64
		for i := range x {
			x[i], ones[i] = float32(rng.NormFloat64()), 1
			want += float64(x[i])
			scale += math.Abs(float64(x[i]))
		}
		got := Sum(x)
		if lanes := lanesDot(x, ones); math.Float32bits(got) != math.Float32bits(lanes) {
			t.Errorf("%s n %d: Sum = %v, want %v bit for bit", Active(), n, got, lanes)
		}
		if math.Abs(float64(got)-want) > 1e-6*scale {
			t.Errorf("%s n %d: Sum = %v, float64 sum %v", Active(), n, got, want)
		}
	}
}

// BenchmarkGemv times the GEMV of one row against GPT-2 small's weights
// (QKV 2304x768, MLP 3072x768 and 768x3072, the tied head 50257x768) on
// the active path, in GB/s of B read.
func BenchmarkGemv(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range [][2]int{{2304, 768}, {3072, 768}, {768, 3072}, {50257, 768}} {
		n, k := s[0], s[1]
		x, w, y := make([]float32, k), make([]float32, n*k), make([]float32, n)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		b.Run(fmt.Sprintf("%dx%d", n, k), func(b *testing.B) {
			b.SetBytes(int64(4 * n * k))
			for b.Loop() {
				Gemm(false, true, 1, n, k, x, k, w, k, 0, y, n)
			}
		})
	}
}
