package layers

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gorgonia.org/gorgonia"
)

// attnBenchSizes are the attention layers of bench/torch_ref.py's S and M.
var attnBenchSizes = []struct {
	name           string
	b, t, d, heads int
}{
	{"S", 32, 12, 32, 4},
	{"M", 64, 64, 128, 8},
}

// benchAttention builds one causal attention layer (fused QKV without bias,
// output projection with bias, float32) on an input x (B*T, D); with
// backward it also adds the gradients of sum(out) with respect to x and
// every weight, so a run is one forward and backward pass.
func benchAttention(b *testing.B, bt, t, d, heads int, backward bool) gorgonia.VM {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", toF32(randDense(rng, 1, bt*t, d)))
	p := newMHSAParams(rng, d, false)
	p.outB = randDense(rng, 0.5, d)
	qkv, err := NewLinear(NewParam(g, "qkv.weight", toF32(p.qkvW)), nil)
	if err != nil {
		b.Fatal(err)
	}
	out, err := NewLinear(NewParam(g, "out.weight", toF32(p.outW)), NewParam(g, "out.bias", toF32(p.outB)))
	if err != nil {
		b.Fatal(err)
	}
	attn, err := NewMultiHeadSelfAttention(bt, t, heads, true, qkv, out)
	if err != nil {
		b.Fatal(err)
	}
	y, _, err := attn.Forward(x, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	if backward {
		cost, err := gorgonia.Sum(y)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := gorgonia.Grad(cost, x, qkv.Weight, out.Weight, out.Bias); err != nil {
			b.Fatal(err)
		}
	}
	return gorgonia.NewTapeMachine(g)
}

func benchmarkAttention(b *testing.B, backward bool) {
	for _, s := range attnBenchSizes {
		b.Run(s.name, func(b *testing.B) {
			vm := benchAttention(b, s.b, s.t, s.d, s.heads, backward)
			defer vm.Close()
			run := func() {
				if err := vm.RunAll(); err != nil {
					b.Fatal(err)
				}
				vm.Reset()
			}
			run()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				run()
			}
		})
	}
}

// BenchmarkAttentionForward times the attention layer's forward pass.
func BenchmarkAttentionForward(b *testing.B) { benchmarkAttention(b, false) }

// BenchmarkAttentionForwardBackward times forward and backward together.
func BenchmarkAttentionForwardBackward(b *testing.B) { benchmarkAttention(b, true) }

// BenchmarkSgemm compares this package's float32 GEMM with the BLAS
// Gorgonia is configured with (gonum's pure Go by default, OpenBLAS with the
// openblas tag) on the shapes of a training step at M, and a square one for
// the peak. Reported as GFLOP/s.
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
		for _, impl := range []string{"kernel", "blas"} {
			if impl == "kernel" && !cpuAVX2FMA {
				continue
			}
			b.Run(s.name+"/"+impl, func(b *testing.B) {
				for b.Loop() {
					if impl == "kernel" {
						sgemm(s.tA, s.tB, s.m, s.n, s.k, a, lda, bm, ldb, 0, c, s.n)
					} else {
						blasGemm(s.tA, s.tB, s.m, s.n, s.k, a, lda, bm, ldb, 0, c, s.n)
					}
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// blasGemm is C = op(A) op(B) + beta C through the BLAS Gorgonia uses.
func blasGemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	gorgonia.WhichBLAS().Sgemm(ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc)
}

// BenchmarkSplitHeads times the head split of the S and M training graphs
// (B*T rows of 3D floats into (3, B, H, T, d)).
func BenchmarkSplitHeads(b *testing.B) {
	for _, s := range attnBenchSizes {
		b.Run(s.name, func(b *testing.B) {
			op := newHeadsOp(true, s.b, s.t, s.heads, s.d/s.heads, 3)
			src := make([]float32, s.b*s.t*3*s.d)
			dst := make([]float32, len(src))
			for b.Loop() {
				permuteHeads(op, src, dst)
			}
		})
	}
}
