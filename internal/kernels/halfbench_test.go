package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// halfBenchOperands returns an n x k weight as float32 and BF16 (the same
// values), an F16 one of the same scale, and m rows of k to multiply them
// with.
func halfBenchOperands(m, n, k int) (x []float32, w32 []float32, bf16, f16 []uint16) {
	rng := rand.New(rand.NewPCG(4096, 4096))
	w32, bf16, f16 = make([]float32, n*k), make([]uint16, n*k), make([]uint16, n*k)
	for i := range w32 {
		bf16[i] = uint16(math.Float32bits(float32(rng.NormFloat64()/64)) >> 16)
		w32[i] = BF16.ToFloat32(bf16[i])
		f16[i] = uint16(rng.IntN(2))<<15 | uint16(8+rng.IntN(8))<<10 | uint16(rng.IntN(1024))
	}
	x = make([]float32, m*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x, w32, bf16, f16
}

// BenchmarkGemvHalf times the decoder's product y = W x for W 4096x4096
// as float32, BF16 and F16 on the active path, each reported in MB/s of
// the weight's bytes read (ns/op compares the three directly: a GEMV
// bound by memory reads half the bytes from 16-bit weights).
func BenchmarkGemvHalf(b *testing.B) {
	const n, k = 4096, 4096
	x, w32, bf16, f16 := halfBenchOperands(1, n, k)
	y := make([]float32, n)
	b.Run("f32", func(b *testing.B) {
		b.SetBytes(4 * n * k)
		for b.Loop() {
			Gemm(false, true, 1, n, k, x, k, w32, k, 0, y, n)
		}
	})
	b.Run("bf16", func(b *testing.B) {
		b.SetBytes(2 * n * k)
		for b.Loop() {
			GemvBF16(y, bf16, x, n, k)
		}
	})
	b.Run("f16", func(b *testing.B) {
		b.SetBytes(2 * n * k)
		for b.Loop() {
			GemvF16(y, f16, x, n, k)
		}
	})
}

// BenchmarkGemvHalfStreamed is BenchmarkGemvHalf over gemvStreamed
// distinct 4096x4096 weights taken in turn, float32 and BF16, so that each
// comes from memory as a decoder's layers do (one 4096x4096 weight fits
// in a large last-level cache), in MB/s of the weights' bytes.
func BenchmarkGemvHalfStreamed(b *testing.B) {
	const n, k, gemvStreamed = 4096, 4096, 6
	x, _, _, _ := halfBenchOperands(1, 1, k)
	y := make([]float32, n)
	w32, bf16 := make([][]float32, gemvStreamed), make([][]uint16, gemvStreamed)
	for i := range gemvStreamed {
		_, w32[i], bf16[i], _ = halfBenchOperands(0, n, k)
	}
	b.Run("f32", func(b *testing.B) {
		b.SetBytes(4 * n * k)
		i := 0
		for b.Loop() {
			Gemm(false, true, 1, n, k, x, k, w32[i%gemvStreamed], k, 0, y, n)
			i++
		}
	})
	b.Run("bf16", func(b *testing.B) {
		b.SetBytes(2 * n * k)
		i := 0
		for b.Loop() {
			GemvBF16(y, bf16[i%gemvStreamed], x, n, k)
			i++
		}
	})
}

// BenchmarkGemmHalf times a forward's product over 256 positions against
// a 4096x4096 Linear weight (transposed B) as float32 and BF16, in
// GFLOP/s.
func BenchmarkGemmHalf(b *testing.B) {
	const m, n, k = 256, 4096, 4096
	x, w32, bf16, _ := halfBenchOperands(m, n, k)
	c := make([]float32, m*n)
	flops := 2.0 * m * n * k
	b.Run("f32", func(b *testing.B) {
		for b.Loop() {
			Gemm(false, true, m, n, k, x, k, w32, k, 0, c, n)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("bf16", func(b *testing.B) {
		for b.Loop() {
			GemmBF16(false, true, m, n, k, x, k, bf16, k, 0, c, n)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}
