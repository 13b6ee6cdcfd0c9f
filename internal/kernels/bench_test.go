package kernels

import (
	"math/rand/v2"
	"testing"
	"time"
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
						sgemm(s.tA, s.tB, s.m, s.n, s.k, a, lda, weights{f32: bm}, ldb, 0, c, s.n)
					case "go":
						sgemmGo(s.tA, s.tB, s.m, s.n, s.k, a, lda, weights{f32: bm}, ldb, 0, c, s.n)
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

// decodeGemvShapes are the (n, k) weights one decoding step of a Llama of
// stories110M's shape reads, in order: per layer the fused q/k/v
// projection, the output projection, SwiGLU's gate, up and down; then the
// tied head (438 MB in all, far beyond the caches).
func decodeGemvShapes() [][2]int {
	var shapes [][2]int
	for range 12 {
		shapes = append(shapes, [2]int{2304, 768}, [2]int{768, 768}, [2]int{2048, 768}, [2]int{2048, 768}, [2]int{768, 2048})
	}
	return append(shapes, [2]int{32000, 768})
}

// weightLayout is where decodeWeights puts the weights: a slice each in
// 4 KiB pages, a slice each in huge pages, or one block on a 2 MiB
// boundary in huge pages (as model.ParamBlock holds a model's).
type weightLayout int

const (
	smallPages weightLayout = iota
	hugeSlices
	hugeBlock
)

// decodeWeights makes decodeGemvShapes' weights, laid out as layout says.
func decodeWeights(shapes [][2]int, layout weightLayout) [][]float32 {
	total := 0
	for _, s := range shapes {
		total += s[0] * s[1]
	}
	var block []float32
	if layout == hugeBlock {
		block = HugePageAligned[float32](total)
	}
	var weights [][]float32
	for _, s := range shapes {
		n := s[0] * s[1]
		var w []float32
		if layout == hugeBlock {
			w, block = block[:n:n], block[n:]
		} else {
			w = make([]float32, n)
		}
		for i := range w {
			w[i] = float32(i%251)/125 - 1
		}
		if layout != smallPages {
			HugePages(w) // filled first, as a model's weights are
		}
		weights = append(weights, w)
	}
	return weights
}

// BenchmarkDecodeGemvs times a decoding step's GEMVs at batch 1 through
// Gemm (split over the cores as in the decoder) on three copies of the
// weights: a slice each in 4 KiB pages, a slice each in huge pages
// (HugePages), and one block in huge pages, the steps taking turns so that
// a shared machine's load falls on all alike: GB/s of weights read on each
// and the ratios.
func BenchmarkDecodeGemvs(b *testing.B) {
	shapes := decodeGemvShapes()
	sets := [3][][]float32{decodeWeights(shapes, smallPages), decodeWeights(shapes, hugeSlices), decodeWeights(shapes, hugeBlock)}
	x, y := make([]float32, 2048), make([]float32, 32000)
	var bytes float64
	for _, s := range shapes {
		bytes += float64(4 * s[0] * s[1])
	}
	var took [3]time.Duration
	i := 0
	for b.Loop() {
		for o := range 3 {
			set := (i + o) % 3 // each goes first every third step
			start := time.Now()
			for j, s := range shapes {
				Gemm(false, true, 1, s[0], s[1], x, s[1], sets[set][j], s[1], 0, y, s[0])
			}
			took[set] += time.Since(start)
		}
		i++
	}
	rate := func(set int) float64 { return bytes * float64(b.N) / took[set].Seconds() / 1e9 }
	b.ReportMetric(rate(0), "GB/s-4KiB")
	b.ReportMetric(rate(1), "GB/s-2MiB")
	b.ReportMetric(rate(2), "GB/s-block")
	b.ReportMetric(rate(1)/rate(0), "2MiB/4KiB")
	b.ReportMetric(rate(2)/rate(1), "block/2MiB")
}
