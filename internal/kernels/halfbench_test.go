package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
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

// takingTurns runs each of runs once per iteration of b's loop, each going
// first in turn, so that a shared machine's load falls on all alike, and
// returns each one's total time.
func takingTurns(b *testing.B, runs ...func(i int)) []time.Duration {
	took := make([]time.Duration, len(runs))
	i := 0
	for b.Loop() {
		for o := range runs {
			r := (i + o) % len(runs)
			start := time.Now()
			runs[r](i)
			took[r] += time.Since(start)
		}
		i++
	}
	return took
}

// BenchmarkGemvHalf times the decoder's product y = W x for W 4096x4096
// as float32, BF16 and F16 on the active path, taking turns: GB/s of each
// weight's bytes read and BF16's speed-up in time over float32 (a GEMV
// bound by memory reads half the bytes from 16-bit weights). "one" is one
// weight of each, read again and again (it may stay in a large last-level
// cache); "streamed" takes six of each in turn, so each comes from memory
// as a decoder's layers do.
func BenchmarkGemvHalf(b *testing.B) {
	const n, k = 4096, 4096
	for _, set := range []struct {
		name    string
		weights int
	}{{"one", 1}, {"streamed", 6}} {
		x, _, _, _ := halfBenchOperands(1, 0, k)
		w32, bf16, f16 := make([][]float32, set.weights), make([][]uint16, set.weights), make([][]uint16, set.weights)
		for i := range set.weights {
			_, w32[i], bf16[i], f16[i] = halfBenchOperands(0, n, k)
		}
		y := make([]float32, n)
		b.Run(set.name, func(b *testing.B) {
			took := takingTurns(b,
				func(i int) { Gemm(false, true, 1, n, k, x, k, w32[i%set.weights], k, 0, y, n) },
				func(i int) { GemvBF16(y, bf16[i%set.weights], x, n, k) },
				func(i int) { GemvF16(y, f16[i%set.weights], x, n, k) })
			rate := func(r int, bytes float64) float64 { return bytes * n * k * float64(b.N) / took[r].Seconds() / 1e9 }
			b.ReportMetric(rate(0, 4), "GB/s-f32")
			b.ReportMetric(rate(1, 2), "GB/s-bf16")
			b.ReportMetric(rate(2, 2), "GB/s-f16")
			b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "bf16-speedup")
		})
	}
}

// BenchmarkGemmHalf times a forward's product over 256 positions against
// a 4096x4096 Linear weight (transposed B) as float32 and BF16, taking
// turns: GFLOP/s of each and BF16's fraction of float32's rate.
func BenchmarkGemmHalf(b *testing.B) {
	const m, n, k = 256, 4096, 4096
	x, w32, bf16, _ := halfBenchOperands(m, n, k)
	c := make([]float32, m*n)
	took := takingTurns(b,
		func(int) { Gemm(false, true, m, n, k, x, k, w32, k, 0, c, n) },
		func(int) { GemmBF16(false, true, m, n, k, x, k, bf16, k, 0, c, n) })
	rate := func(r int) float64 { return 2 * m * n * k * float64(b.N) / took[r].Seconds() / 1e9 }
	b.ReportMetric(rate(0), "GFLOP/s-f32")
	b.ReportMetric(rate(1), "GFLOP/s-bf16")
	b.ReportMetric(rate(1)/rate(0), "bf16/f32")
}
