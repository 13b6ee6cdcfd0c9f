package kernels

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSgemm compares this package's float32 GEMM on the active path
// (kernel), its Go form (go, the generic path's) and the BLAS (gonum's pure
// Go by default, OpenBLAS with the openblas tag) on the shapes of a training
// step at M, and a square one for the peak. Reported as GFLOP/s.
func BenchmarkSgemm(b *testing.B) {
	shapes := []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"qkv_fwd_4096x384x128_NT", false, true, 4096, 384, 128},
		{"dW_384x128x4096_TN", true, false, 384, 128, 4096},
		{"dx_4096x128x384_NN", false, false, 4096, 128, 384},
		{"head_64x64x16_NT", false, true, 64, 64, 16},
		{"head_64x16x64_NN", false, false, 64, 16, 64},
		{"headS_12x12x8_NT", false, true, 12, 12, 8},
		{"headS_12x8x12_NN", false, false, 12, 8, 12},
		{"square_1024", false, false, 1024, 1024, 1024},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range shapes {
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		a, bm, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range bm {
			bm[i] = float32(rng.NormFloat64())
		}
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		for _, impl := range []string{"kernel", "go", "blas"} {
			if impl == "kernel" && !useAVX2 {
				continue
			}
			b.Run(s.name+"/"+impl, func(b *testing.B) {
				for b.Loop() {
					switch impl {
					case "kernel":
						sgemm(s.tA, s.tB, s.m, s.n, s.k, a, lda, bm, ldb, 0, c, s.n)
					case "go":
						sgemmGo(s.tA, s.tB, s.m, s.n, s.k, a, lda, bm, ldb, 0, c, s.n)
					default:
						blasSgemm(trans(s.tA), trans(s.tB), s.m, s.n, s.k, a, lda, bm, ldb, 0, c, s.n)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkGELU times GELU and its gradient, on one core, over one L4
// layer's MLP activations (B16 T64 d_ff 512: 524,288 elements).
func BenchmarkGELU(b *testing.B) {
	n := 16 * 64 * 512
	x, dy, out := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range x {
		x[i] = float32(i%1000)/250 - 2
		dy[i] = 1
	}
	b.Run("forward", func(b *testing.B) {
		b.SetBytes(int64(8 * n))
		for range b.N {
			GELU(x, out)
		}
	})
	b.Run("gradient", func(b *testing.B) {
		b.SetBytes(int64(12 * n))
		for range b.N {
			GELUGrad(x, dy, out)
		}
	})
}
