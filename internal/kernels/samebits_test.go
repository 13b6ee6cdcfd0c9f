package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFMA32RoundsOnce: fma32 equals x*y + z computed exactly (math/big)
// and rounded once to float32, for random operands over wide exponent
// ranges, sums that cancel, results below float32's normal range, and sums
// built to fall just beside a float32 halfway point, where rounding to
// float64 first (float32(math.FMA)) gives the other neighbour: the test
// checks that those cases do catch double rounding.
func TestFMA32RoundsOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	random := func(exp int) float32 {
		return float32(math.Ldexp(rng.NormFloat64(), rng.IntN(2*exp+1)-exp))
	}
	type triple struct{ x, y, z float32 }
	var cases []triple
	for range 20000 {
		x, y := random(20), random(20)
		cases = append(cases, triple{x, y, random(40)}, triple{x, y, -x * y}, triple{random(70), random(70), random(140)})
	}
	// 24929 * 673 = 2^24 + 1: x*y = 1 + 2^-24, halfway between 1 and the
	// next float32; a tiny z decides the side, which float64 loses.
	xh, yh := float32(24929), float32(673*0x1p-24)
	// Below float32's normal range: 641 * 6700417 = 2^32 + 1, so x*y =
	// 2^-150 (1 + 2^-32) and z + x*y lies just past the halfway point
	// 2^-127 + 2^-150, where float64 rounds it.
	halfway := []triple{{xh, yh, 0x1p-60}, {-xh, yh, -0x1p-60}, {xh * 0x1p-60, yh, 0x1p-120}, {641 * 0x1p-91, 6700417 * 0x1p-91, 0x1p-127}}
	cases = append(cases, halfway...)
	for _, c := range cases {
		if got, want := fma32(c.x, c.y, c.z), exactFMA32(c.x, c.y, c.z); math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", c.x, c.y, c.z, got, want)
		}
	}
	for _, c := range halfway {
		if twice := float32(math.FMA(float64(c.x), float64(c.y), float64(c.z))); twice == exactFMA32(c.x, c.y, c.z) {
			t.Errorf("(%g, %g, %g) is no double-rounding case", c.x, c.y, c.z)
		}
	}
}

// exactFMA32 is x*y + z in exact arithmetic rounded to float32.
func exactFMA32(x, y, z float32) float32 {
	p := new(big.Float).SetPrec(400).SetFloat64(float64(x))
	p.Mul(p, new(big.Float).SetFloat64(float64(y)))
	p.Add(p, new(big.Float).SetFloat64(float64(z)))
	f, _ := p.Float32()
	if f == 0 && (x*y == 0 || x*y < 0 != (z < 0)) { // the sign IEEE gives an exact zero
		return x*y + z
	}
	return f
}

// sameBitsCase runs kernels and returns their outputs.
type sameBitsCase struct {
	name string
	run  func() [][]float32
}

// TestSameBitsOnEveryPath: each kernel whose order the assembly fixes
// gives the generic path's bits on every path, the float32 GEMM for every
// transpose combination, tile edges, depths past a block, beta 0, 1 and 0.5,
// and sizes that run on several goroutines, and over BF16 and F16 weights
// (GemmHalf, Widen); ExpShift (values and sum),
// MaxOf, SoftmaxGradRow, GELU, GELUGrad, SiLUMul and SiLUMulGrad for
// lengths with and without a tail, with NaN, infinities, signed zeros and
// arguments past the exp's clamps. (A NaN's payload is not compared.)
func TestSameBitsOnEveryPath(t *testing.T) {
	defer setPath(active)
	paths := testPaths(t)
	if len(paths) < 2 && paths[0] != Generic {
		paths = append([]Path{Generic}, paths...)
	}
	cases := append(append(gemmSameBitsCases(), rowSameBitsCases()...), halfSameBitsCases()...)
	setPath(Generic)
	want := make([][][]float32, len(cases))
	for i, c := range cases {
		want[i] = c.run()
	}
	for _, p := range paths {
		setPath(p)
		for i, c := range cases {
			for o, out := range c.run() {
				if j := firstBitDifference(out, want[i][o]); j >= 0 {
					t.Errorf("%s, %s: output %d [%d] = %v, generic %v", p, c.name, o, j, out[j], want[i][o][j])
				}
			}
		}
	}
}

// firstBitDifference is the first index where a and b differ in their bits
// (any two NaNs alike), or -1.
func firstBitDifference(a, b []float32) int {
	for j := range a {
		if math.Float32bits(a[j]) != math.Float32bits(b[j]) && !(math.IsNaN(float64(a[j])) && math.IsNaN(float64(b[j]))) {
			return j
		}
	}
	return -1
}

func gemmSameBitsCases() []sameBitsCase {
	var cases []sameBitsCase
	shapes := [][3]int{{1, 7, 5}, {4, 33, 300}, {5, 40, 17}, {6, 16, 8}, {13, 70, 520}, {12, 32, 256}, {25, 3, 9}, {37, 100, 64}, {130, 200, 180}}
	for _, mnk := range shapes {
		for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
			for _, beta := range []float32{0, 1, 0.5} {
				m, n, k := mnk[0], mnk[1], mnk[2]
				name := fmt.Sprintf("Gemm %dx%dx%d trans %v beta %v", m, n, k, tr, beta)
				cases = append(cases, sameBitsCase{name, func() [][]float32 {
					a, lda, b, ldb, c, ldc := gemmOperands(m, n, k, tr[0], tr[1])
					Gemm(tr[0], tr[1], m, n, k, a, lda, b, ldb, beta, c, ldc)
					return [][]float32{c}
				}})
			}
		}
	}
	return cases
}

// gemmOperands returns seeded operands of an m x n x k product with
// leading dimensions wider than the matrices.
func gemmOperands(m, n, k int, transA, transB bool) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	rng := rand.New(rand.NewPCG(uint64(m*1000+n), uint64(k)))
	lda, ldb, ldc = k+3, n+1, n+2
	rowsA, rowsB := m, k
	if transA {
		lda, rowsA = m+3, k
	}
	if transB {
		ldb, rowsB = k+1, n
	}
	fill := func(size int) []float32 {
		v := make([]float32, size)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	return fill(rowsA * lda), lda, fill(rowsB * ldb), ldb, fill(m * ldc), ldc
}

func rowSameBitsCases() []sameBitsCase {
	var cases []sameBitsCase
	for _, n := range []int{1, 7, 8, 13, 64, 300, 1037} {
		x := rowInputs(n)
		dy := slices.Clone(x)
		slices.Reverse(dy)
		cases = append(cases,
			sameBitsCase{fmt.Sprintf("ExpShift n=%d", n), func() [][]float32 {
				y := make([]float32, n)
				sum := ExpShift(x, y, 0.75, 1.5)
				return [][]float32{y, {sum}}
			}},
			sameBitsCase{fmt.Sprintf("MaxOf, SoftmaxGradRow n=%d", n), func() [][]float32 {
				y, dx := make([]float32, n), make([]float32, n)
				ExpShift(x, y, 0.01, 0) // softmax-like weights, NaN kept
				SoftmaxGradRow(y, dy, dx, 0.5)
				zeros := make([]float32, n) // MaxOf's choice between signed zeros
				for i := range zeros {
					zeros[i] = float32(math.Copysign(0, float64(i%3-1)))
				}
				return [][]float32{{MaxOf(x), MaxOf(dy), MaxOf(zeros)}, dx}
			}},
			sameBitsCase{fmt.Sprintf("GELU, GELUGrad n=%d", n), func() [][]float32 {
				y, dx := make([]float32, n), make([]float32, n)
				GELU(x, y)
				GELUGrad(x, dy, dx)
				return [][]float32{y, dx}
			}},
			sameBitsCase{fmt.Sprintf("SiLUMul, SiLUMulGrad n=%d", n), func() [][]float32 {
				y, dg := make([]float32, n), make([]float32, n)
				SiLUMul(x, dy, y)
				SiLUMulGrad(x, dy, dy, dg)
				return [][]float32{y, dg}
			}},
		)
	}
	return cases
}

// rowInputs is n seeded values over [-100, 100], the larger ones rare, with
// signed zeros, infinities and a NaN among them from n = 13 on.
func rowInputs(n int) []float32 {
	rng := rand.New(rand.NewPCG(uint64(n), 5))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(3))))
	}
	if n >= 13 {
		copy(x[3:], []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), -87.5, 88.5, float32(math.NaN())})
	}
	return x
}
