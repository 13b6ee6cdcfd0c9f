package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refGemm is C = op(A) op(B) + beta C in float64, the plain triple loop; it
// also returns sum |op(A)| |op(B)| per entry, the scale of the rounding error.
func refGemm[T float](transA, transB bool, m, n, k int, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) (want, scale []float64) {
	want, scale = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			for p := 0; p < k; p++ {
				var x, y T
				if transA {
					x = a[p*lda+i]
				} else {
					x = a[i*lda+p]
				}
				if transB {
					y = b[j*ldb+p]
				} else {
					y = b[p*ldb+j]
				}
				s += float64(x) * float64(y)
				abs += math.Abs(float64(x) * float64(y))
			}
			want[i*n+j] = s + float64(beta)*float64(c[i*ldc+j])
			scale[i*n+j] = abs + math.Abs(float64(beta)*float64(c[i*ldc+j]))
		}
	}
	return want, scale
}

// TestSgemmMatchesReference checks the float32 Gemm on every path (see
// forEachPath) against the float64 triple loop for every transpose
// combination, beta 0, 1 and 0.5, sizes that are and are not multiples of
// the 6x16 tile and of the 256-deep block, leading dimensions wider than the
// matrices, sizes large enough to run on several goroutines, the edges k = 0
// (C = beta C), m or n = 0 (nothing to do) and n > 2048 (more than one
// packed block of B columns, serial and parallel), and that it leaves C
// outside its m x n block alone. Tolerance: 1e-6 times sum |a||b| per entry
// (float32 rounding of a k-term sum).
func TestSgemmMatchesReference(t *testing.T) {
	forEachPath(t, testSgemm)
}

func testSgemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	dims := [][3]int{{1, 1, 1}, {6, 16, 8}, {7, 17, 3}, {12, 12, 8}, {24, 16, 20}, {64, 16, 64}, {64, 48, 64}, {64, 64, 16}, {5, 33, 300}, {130, 70, 520}, {200, 300, 40}, {37, 5, 1},
		{4, 7, 0}, {2, 64, 256}, {4, 17, 64}, {13, 20, 0}, {0, 9, 5}, {8, 0, 5}, {0, 0, 0}, {7, 2100, 9}, {3, 4200, 2}, {24, 2100, 100}}
	for _, mnk := range dims {
		m, n, k := mnk[0], mnk[1], mnk[2]
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				for _, c := range []struct {
					beta  float32
					spare int
				}{{0, 0}, {1, 0}, {0.5, 0}, {0, 6}, {1, 6}} {
					beta, spare := c.beta, c.spare
					t.Run(fmt.Sprintf("%dx%dx%d,tA=%t,tB=%t,beta=%v,spare=%d", m, n, k, ta, tb, beta, spare), func(t *testing.T) {
						ar, ac := m, k
						if ta {
							ar, ac = k, m
						}
						br, bc := k, n
						if tb {
							br, bc = n, k
						}
						lda, ldb, ldc := ac+3, bc+1, n+2
						fill := func(rows, ld int) []float32 {
							v := make([]float32, rows*ld)
							for i := range v {
								v[i] = float32(rng.NormFloat64())
							}
							return v
						}
						// Six spare rows after A: a last partial panel of
						// op(A) is then read in place, not packed.
						a, b, c := fill(ar+spare, lda), fill(br, ldb), fill(m, ldc)
						orig := append([]float32(nil), c...)
						want, scale := refGemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)
						Gemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc)
						for i := 0; i < m; i++ {
							for j := 0; j < ldc; j++ {
								got := float64(c[i*ldc+j])
								if j >= n {
									if c[i*ldc+j] != orig[i*ldc+j] {
										t.Fatalf("C[%d][%d] outside the %dx%d block changed", i, j, m, n)
									}
									continue
								}
								if e := math.Abs(got - want[i*n+j]); e > 1e-6*scale[i*n+j]+1e-30 {
									t.Fatalf("C[%d][%d] = %v, want %v (error %.3g, scale %.3g)", i, j, got, want[i*n+j], e, scale[i*n+j])
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestDgemmMatchesReference checks the float64 Gemm (always the BLAS)
// against the triple loop on a few shapes, both transposes and beta 0 and
// 0.5, within 1e-12 times sum |a||b| per entry.
func TestDgemmMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, mnk := range [][3]int{{1, 1, 1}, {7, 17, 3}, {64, 48, 64}, {5, 2100, 3}, {4, 6, 0}} {
		m, n, k := mnk[0], mnk[1], mnk[2]
		for _, tr := range []bool{false, true} {
			for _, beta := range []float64{0, 0.5} {
				ar, ac, br, bc := m, k, k, n
				if tr {
					ar, ac, br, bc = k, m, n, k
				}
				ac, bc = max(1, ac), max(1, bc) // BLAS's least leading dimensions
				fill := func(rows, cols int) []float64 {
					v := make([]float64, rows*cols)
					for i := range v {
						v[i] = rng.NormFloat64()
					}
					return v
				}
				a, b, c := fill(ar, ac), fill(br, bc), fill(m, n)
				want, scale := refGemm(tr, tr, m, n, k, a, ac, b, bc, beta, c, n)
				Gemm(tr, tr, m, n, k, a, ac, b, bc, beta, c, n)
				for i, w := range want {
					if math.Abs(c[i]-w) > 1e-12*scale[i]+1e-300 {
						t.Fatalf("%dx%dx%d trans %t beta %v: C[%d] = %v, want %v", m, n, k, tr, beta, i, c[i], w)
					}
				}
			}
		}
	}
}

// TestAxpyDot: y += a x and x·y against float64 loops (float32 at 1e-5,
// float64 at 1e-12, relative to the sum of magnitudes).
func TestAxpyDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 7, 16, 130} {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = rng.NormFloat64(), rng.NormFloat64()
		}
		var want, scale float64
		for i := range x {
			want += x[i] * y[i]
			scale += math.Abs(x[i] * y[i])
		}
		if got := Dot(x, y); math.Abs(got-want) > 1e-12*(1+scale) {
			t.Errorf("n %d: Dot = %v, want %v", n, got, want)
		}
		if got := Dot(f32s(x), f32s(y)); math.Abs(float64(got)-want) > 1e-5*(1+scale) {
			t.Errorf("n %d: float32 Dot = %v, want %v", n, got, want)
		}
		y0, y32 := append([]float64(nil), y...), f32s(y)
		Axpy(1.5, x, y)
		Axpy(1.5, f32s(x), y32)
		for i := range y {
			if w := y0[i] + 1.5*x[i]; math.Abs(y[i]-w) > 1e-12*(1+math.Abs(w)) || math.Abs(float64(y32[i])-w) > 1e-5*(1+math.Abs(w)) {
				t.Fatalf("n %d: Axpy gave %v (float32 %v) at %d", n, y[i], y32[i], i)
			}
		}
	}
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// sgemmPaths are the paths of testPaths that multiply float32 with sgemm
// (the generic one hands them to the BLAS).
func sgemmPaths(t *testing.T) []Path {
	var ps []Path
	for _, p := range testPaths(t) {
		if p >= AVX2 {
			ps = append(ps, p)
		}
	}
	return ps
}

// TestSgemmColumnSplitSameBits: a transposed B split by columns over two
// workers (sgemmColumnsParallel, each packing its own part) gives C bit for
// bit as the split by rows over a shared packing and as one goroutine, with
// partial tiles at both edges, depths past one block, beta 0 and 1.
func TestSgemmColumnSplitSameBits(t *testing.T) {
	defer setPath(active)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, p := range sgemmPaths(t) {
		setPath(p)
		for _, mnk := range [][3]int{{40, 200, 300}, {30, 1000, 64}, {13, 70, 520}} {
			m, n, k := mnk[0], mnk[1], mnk[2]
			lda, ldb, ldc := k+3, k+1, n+2
			a, b, c0 := make([]float32, m*lda), make([]float32, n*ldb), make([]float32, m*ldc)
			for _, v := range [][]float32{a, b, c0} {
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
			}
			for _, beta := range []float32{0, 1} {
				serial, rows, cols := slices.Clone(c0), slices.Clone(c0), slices.Clone(c0)
				sgemmColumns(false, true, m, 0, n, k, a, lda, weights{f32: b}, ldb, beta, serial, ldc)
				sgemmParallel(2, false, true, m, n, k, a, lda, weights{f32: b}, ldb, beta, rows, ldc)
				sgemmColumnsParallel(2, false, m, n, k, a, lda, weights{f32: b}, ldb, beta, cols, ldc)
				for i := range serial {
					if math.Float32bits(cols[i]) != math.Float32bits(serial[i]) || math.Float32bits(rows[i]) != math.Float32bits(serial[i]) {
						t.Fatalf("%v %dx%dx%d beta %v: C[%d] is %v by columns, %v by rows, %v on one goroutine", p, m, n, k, beta, i, cols[i], rows[i], serial[i])
					}
				}
			}
		}
	}
}

// TestPackTransposedB: packB of a transposed B lays step p of column j of
// each 16-column panel at panel[p*16 + j] (zero past the last column), for
// depths around the 8-step blocks of the assembly and partial panels.
func TestPackTransposedB(t *testing.T) {
	defer setPath(active)
	for _, p := range sgemmPaths(t) {
		setPath(p)
		for _, kc := range []int{1, 7, 8, 9, 256} {
			for _, cols := range []int{5, 16, 33} {
				const k0, j0 = 2, 3
				ldb := k0 + kc + 4
				b := make([]float32, (j0+cols)*ldb)
				for i := range b {
					b[i] = float32(i)
				}
				pb := make([]float32, kc*roundUp(cols, sgemmNR))
				packB(true, weights{f32: b}, ldb, k0, j0, kc, cols, pb)
				for jr := 0; jr < cols; jr += sgemmNR {
					for q := 0; q < kc; q++ {
						for j := 0; j < sgemmNR; j++ {
							want := float32(0)
							if jr+j < cols {
								want = b[(j0+jr+j)*ldb+k0+q]
							}
							if got := pb[jr*kc+q*sgemmNR+j]; got != want {
								t.Fatalf("%v kc %d cols %d: panel %d step %d column %d = %v, want %v", p, kc, cols, jr/sgemmNR, q, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}
