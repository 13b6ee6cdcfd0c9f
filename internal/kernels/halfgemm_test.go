package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// refHalf is the value of a 16-bit pattern in format h from its fields
// (sign, exponent, mantissa) in float64, independent of the code under
// test; NaN for every NaN pattern.
func refHalf(h Half, v uint16) float64 {
	expBits, manBits, bias := 8, 7, 127
	if h == F16 {
		expBits, manBits, bias = 5, 10, 15
	}
	sign := 1.0
	if v>>15 != 0 {
		sign = -1
	}
	exp := int(v>>manBits) & (1<<expBits - 1)
	man := float64(int(v) & (1<<manBits - 1))
	switch {
	case exp == 1<<expBits-1 && man != 0:
		return math.NaN()
	case exp == 1<<expBits-1:
		return math.Inf(int(sign))
	case exp == 0:
		return sign * math.Ldexp(man, 1-bias-manBits)
	}
	return sign * math.Ldexp(1+man/float64(int(1)<<manBits), exp-bias)
}

// refWiden is the weights widened by refHalf, the float32 operand the
// promise compares against (a NaN pattern gives some NaN: the tests take
// any two NaNs alike).
func refWiden(h Half, src []uint16) []float32 {
	dst := make([]float32, len(src))
	for i, v := range src {
		dst[i] = float32(refHalf(h, v))
	}
	return dst
}

// TestWidenExact: on every path Widen gives every one of the 65,536 BF16
// and F16 patterns its value (subnormals, signed zeros, infinities); BF16
// is the pattern shifted, NaNs too, and an F16 NaN becomes a quiet NaN
// with its sign and payload, as VCVTPH2PS makes it; the assembly's bits
// are the Go conversion's (ToFloat32) for every pattern, NaNs too; and the
// lengths around the vector widths leave dst past len(src) alone.
func TestWidenExact(t *testing.T) { forEachPath(t, testWidenExact) }

func testWidenExact(t *testing.T) {
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, h := range []Half{BF16, F16} {
		got := make([]float32, len(all))
		Widen(h, got, all)
		for i, v := range all {
			want, g := refHalf(h, v), got[i]
			if one := h.ToFloat32(v); math.Float32bits(one) != math.Float32bits(g) {
				t.Fatalf("%s %s %#04x: Widen gives %#08x, ToFloat32 (Go) %#08x", Active(), h, v, math.Float32bits(g), math.Float32bits(one))
			}
			if h == BF16 && math.Float32bits(g) != uint32(v)<<16 {
				t.Fatalf("%s BF16 %#04x: widened to %#08x, want the pattern shifted", Active(), v, math.Float32bits(g))
			}
			if math.IsNaN(want) {
				bits, payload := math.Float32bits(g), uint32(v)&0x3ff<<13
				if h == F16 && (!math.IsNaN(float64(g)) || bits>>31 != uint32(v>>15) || bits&(1<<22) == 0 || bits&payload != payload) {
					t.Fatalf("%s F16 %#04x: widened to %#08x, want a quiet NaN with the sign and payload", Active(), v, bits)
				}
				continue
			}
			if float64(g) != want || math.Signbit(float64(g)) != math.Signbit(want) {
				t.Fatalf("%s %s %#04x: widened to %v, want %v", Active(), h, v, g, want)
			}
		}
		for n := range 70 {
			dst := make([]float32, n+3)
			dst[n], dst[n+1], dst[n+2] = 7, 7, 7
			src := all[0x3c00+5 : 0x3c00+5+n]
			Widen(h, dst, src)
			if dst[n] != 7 || dst[n+1] != 7 || dst[n+2] != 7 {
				t.Fatalf("%s %s n %d: Widen wrote past len(src)", Active(), h, n)
			}
			for i, v := range src {
				if dst[i] != h.ToFloat32(v) {
					t.Fatalf("%s %s n %d: dst[%d] = %v, want %v", Active(), h, n, i, dst[i], h.ToFloat32(v))
				}
			}
		}
	}
}

// halfWeights returns n seeded 16-bit weights in format h: mostly values of
// a normal distribution's scale (F16: exponents down into the subnormals),
// one in specials of them any pattern at all (infinities, NaNs) when
// specials > 0.
func halfWeights(h Half, n, specials int, rng *rand.Rand) []uint16 {
	w := make([]uint16, n)
	for i := range w {
		switch {
		case specials > 0 && rng.IntN(specials) == 0:
			w[i] = uint16(rng.Uint32())
		case h == BF16:
			w[i] = uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
		default: // sign, exponent 0-16 (0: subnormal), any mantissa
			w[i] = uint16(rng.IntN(2))<<15 | uint16(rng.IntN(17))<<10 | uint16(rng.IntN(1024))
		}
	}
	return w
}

// halfCase is one product of halfCases: op(A) m x k, op(B) k x n with B
// 16-bit, padded leading dimensions (odd pads make rows start off any
// vector alignment).
type halfCase struct {
	h              Half
	transA, transB bool
	m, n, k        int
	pa, pb, pc     int // pads of lda, ldb, ldc
	beta           float32
	specials       int
}

func (c halfCase) String() string {
	return fmt.Sprintf("%s trans %v,%v %dx%dx%d pads %d,%d,%d beta %v", c.h, c.transA, c.transB, c.m, c.n, c.k, c.pa, c.pb, c.pc, c.beta)
}

// run multiplies the case's seeded operands through GemmHalf and through
// Gemm over refWiden's B, and returns both Cs (padding included).
func (c halfCase) run(seed uint64) (got, want []float32) {
	rng := rand.New(rand.NewPCG(seed, uint64(c.m*1000003+c.n*1009+c.k)))
	ar, ac := c.m, c.k // A as stored
	if c.transA {
		ar, ac = ac, ar
	}
	br, bc := c.k, c.n // B as stored
	if c.transB {
		br, bc = bc, br
	}
	lda, ldb, ldc := max(ac, 1)+c.pa, max(bc, 1)+c.pb, c.n+c.pc
	a := make([]float32, ar*lda)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	b := halfWeights(c.h, br*ldb, c.specials, rng)
	c0 := make([]float32, c.m*ldc)
	for i := range c0 {
		c0[i] = float32(rng.NormFloat64())
	}
	got, want = slices.Clone(c0), slices.Clone(c0)
	GemmHalf(c.h, c.transA, c.transB, c.m, c.n, c.k, a, lda, b, ldb, c.beta, got, ldc)
	Gemm(c.transA, c.transB, c.m, c.n, c.k, a, lda, refWiden(c.h, b), ldb, c.beta, want, ldc)
	return got, want
}

// checkHalfCase fails the test when GemmHalf and Gemm over the widened B
// differ in any bit of C (NaNs alike), inside the block or out.
func checkHalfCase(t *testing.T, c halfCase, seed uint64) {
	t.Helper()
	got, want := c.run(seed)
	if j := firstBitDifference(got, want); j >= 0 {
		t.Fatalf("%s %v: C[%d] = %v (%#08x), Gemm over the widened B %v (%#08x)", Active(), c, j, got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
	}
}

// halfEdgeCases are the shapes where kernels change: m up to and past the
// GEMV's four rows and the GEMM's 6- and 12-row tiles, n around the GEMV's
// 4-, 8- and 16-row groups and the GEMM's 16- and 32-column tiles (rows of
// B not a multiple of any unroll), k below, at and past the 16 lanes (whole
// groups of 16 an odd and an even number: the kernels step 32 at a time)
// and the 256-deep blocks, every transpose combination, beta 0, 1 and 0.5;
// and products that sgemm splits over the cores.
func halfEdgeCases() []halfCase {
	var cases []halfCase
	for _, h := range []Half{BF16, F16} {
		for _, tr := range [][2]bool{{false, true}, {false, false}, {true, true}, {true, false}} {
			for _, mnk := range [][3]int{
				{1, 1, 1}, {1, 9, 15}, {1, 17, 16}, {1, 33, 17}, {2, 8, 33}, {3, 12, 100}, {4, 70, 31}, {1, 23, 50}, {2, 16, 83},
				{1, 300, 0}, {5, 7, 5}, {6, 16, 8}, {7, 33, 47}, {13, 70, 260}, {12, 32, 256}, {25, 3, 9},
			} {
				for bi, beta := range []float32{0, 1, 0.5} {
					pads := [3]int{bi, 2*bi + 1, bi + 2}
					cases = append(cases, halfCase{h, tr[0], tr[1], mnk[0], mnk[1], mnk[2], pads[0], pads[1], pads[2], beta, 0})
				}
			}
		}
	}
	for _, h := range []Half{BF16, F16} { // large enough to split over the cores, by columns and by rows
		for _, transB := range []bool{true, false} {
			cases = append(cases, halfCase{h, false, transB, 40, 300, 350, 1, 3, 2, 1, 0})
		}
	}
	return cases
}

// TestGemmHalfSameBitsAsWidened: on every path, GemmHalf over BF16 and
// F16 weights gives C bit for bit as Gemm over the weights widened to
// float32 (refWiden, not Widen), at every edge of halfEdgeCases.
func TestGemmHalfSameBitsAsWidened(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		for _, c := range halfEdgeCases() {
			checkHalfCase(t, c, 1)
		}
	})
}

// TestGemmHalfWidenedBLASForm: gemmHalfWidened, GemmHalf's form for the
// BLAS builds, gives Gemm's bits over B widened when B fits in its scratch
// (checked here against the kernels Gemm uses on this build).
func TestGemmHalfWidenedBLASForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, c := range halfEdgeCases() {
		if rng.IntN(4) != 0 {
			continue
		}
		ar, ldaOf, br, ldbOf := c.m, c.k, c.k, c.n
		if c.transA {
			ar, ldaOf = c.k, c.m
		}
		if c.transB {
			br, ldbOf = c.n, c.k
		}
		lda, ldb, ldc := max(ldaOf, 1)+c.pa, max(ldbOf, 1)+c.pb, c.n+c.pc
		a := make([]float32, ar*lda)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		b := halfWeights(c.h, br*ldb, 30, rng)
		got, want := make([]float32, c.m*ldc), make([]float32, c.m*ldc)
		gemmHalfWidened(c.h, c.transA, c.transB, c.m, c.n, c.k, a, lda, b, ldb, c.beta, got, ldc)
		Gemm(c.transA, c.transB, c.m, c.n, c.k, a, lda, refWiden(c.h, b), ldb, c.beta, want, ldc)
		if j := firstBitDifference(got, want); j >= 0 {
			t.Fatalf("%v: C[%d] = %v, Gemm over the widened B %v", c, j, got[j], want[j])
		}
	}
}

// TestGemmHalfRandomized: the same promise over a seeded table of random
// cases: shapes, strides, flags, beta, and weights that include any
// pattern at all (infinities, NaNs, F16 subnormals) one time in 50.
func TestGemmHalfRandomized(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(47, 48))
		for range 150 {
			c := halfCase{
				h: Half(1 + rng.IntN(2)), transA: rng.IntN(4) == 0, transB: rng.IntN(3) != 0,
				m: 1 + rng.IntN(20), n: 1 + rng.IntN(90), k: rng.IntN(300),
				pa: rng.IntN(4), pb: rng.IntN(5), pc: rng.IntN(3),
				beta: []float32{0, 1, 0.5, -2}[rng.IntN(4)], specials: 50,
			}
			if rng.IntN(2) == 0 {
				c.m = 1 + rng.IntN(gemvRows) // the GEMV, the decoder's product
			}
			checkHalfCase(t, c, rng.Uint64())
		}
	})
}

// FuzzGemmHalf: any small shape, flags and seed keep the promise on the
// active path.
func FuzzGemmHalf(f *testing.F) {
	f.Add(uint8(1), uint8(33), uint16(17), uint8(3), uint8(1), uint64(1))
	f.Add(uint8(7), uint8(40), uint16(300), uint8(2), uint8(2), uint64(2))
	f.Fuzz(func(t *testing.T, m, n uint8, k uint16, flags, hsel uint8, seed uint64) {
		c := halfCase{
			h: Half(1 + hsel%2), transA: flags&1 != 0, transB: flags&2 == 0,
			m: 1 + int(m%24), n: 1 + int(n), k: int(k % 600),
			pa: int(flags>>2) % 3, pb: int(flags>>4) % 5, pc: 1, beta: float32(flags>>6) / 2, specials: 40,
		}
		checkHalfCase(t, c, seed)
	})
}

// halfSameBitsCases are TestSameBitsOnEveryPath's cases of the 16-bit
// kernels: GemmHalf at a GEMV's and a GEMM's shapes, every transpose
// combination, weights with any pattern one time in 20, and Widen.
func halfSameBitsCases() []sameBitsCase {
	var cases []sameBitsCase
	for _, h := range []Half{BF16, F16} {
		for _, mnk := range [][3]int{{1, 37, 83}, {3, 40, 300}, {13, 70, 260}} {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				c := halfCase{h, tr[0], tr[1], mnk[0], mnk[1], mnk[2], 1, 3, 2, 0.5, 20}
				cases = append(cases, sameBitsCase{"GemmHalf " + c.String(), func() [][]float32 {
					got, _ := c.run(3)
					return [][]float32{got}
				}})
			}
		}
		cases = append(cases, sameBitsCase{"Widen " + h.String(), func() [][]float32 {
			src := halfWeights(h, 1000, 5, rand.New(rand.NewPCG(1, 2)))
			dst := make([]float32, len(src))
			Widen(h, dst, src)
			return [][]float32{dst}
		}})
	}
	return cases
}

// TestHalfFormatChecked: a Half that is neither BF16 nor F16 (the zero
// value) makes the kernels panic naming it, not read the weights as some
// format.
func TestHalfFormatChecked(t *testing.T) {
	for name, run := range map[string]func(){
		"Widen": func() { Widen(0, make([]float32, 4), make([]uint16, 4)) },
		"GemmHalf": func() {
			GemmHalf(3, false, true, 8, 2, 2, make([]float32, 16), 2, make([]uint16, 4), 2, 0, make([]float32, 16), 2)
		},
		"GemvHalf": func() { GemvHalf(0, make([]float32, 2), make([]uint16, 4), make([]float32, 2), 2, 2) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "is not a 16-bit format") {
					t.Errorf("%s with a bad Half: recovered %v, want a panic naming it", name, r)
				}
			}()
			run()
		}()
	}
}

// TestGemvHalf: GemvHalf is the GEMV over the widened weights, bit for
// bit, on every path (y = W x, no beta, y past rows untouched).
func TestGemvHalf(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, h := range []Half{BF16, F16} {
			for _, rc := range [][2]int{{1, 1}, {7, 15}, {9, 16}, {17, 33}, {70, 100}, {300, 257}, {130, 768}} {
				rows, cols := rc[0], rc[1]
				w := halfWeights(h, rows*cols, 0, rng)
				x := make([]float32, cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				got, want := make([]float32, rows+1), make([]float32, rows+1)
				got[rows], want[rows] = 3, 3
				GemvHalf(h, got, w, x, rows, cols)
				Gemm(false, true, 1, rows, cols, x, cols, refWiden(h, w), cols, 0, want, rows)
				if j := firstBitDifference(got, want); j >= 0 {
					t.Fatalf("%s %s %dx%d: y[%d] = %v, the GEMV over the widened W %v", Active(), h, rows, cols, j, got[j], want[j])
				}
			}
		}
	})
}

// TestEmbedRows: each row of the lookup is its id's row of the table,
// widened exactly.
func TestEmbedRows(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, h := range []Half{BF16, F16} {
			const vocab, d = 11, 37
			table := halfWeights(h, vocab*d, 0, rng)
			ids := []int{3, 0, 10, 3}
			dst := make([]float32, len(ids)*d)
			EmbedRows(h, dst, table, d, ids)
			wide := refWiden(h, table)
			for n, id := range ids {
				if !slices.Equal(dst[n*d:(n+1)*d], wide[id*d:(id+1)*d]) {
					t.Fatalf("%s %s: row %d is not row %d of the table widened", Active(), h, n, id)
				}
			}
		}
	})
}
