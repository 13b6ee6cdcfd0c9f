// Package kernels holds the numerical inner loops the custom ops run on:
// GEMM, the vector exponential and row kernels of the softmax, and the
// parallel loop that spreads rows over the cores. It knows nothing of
// Gorgonia: it works on row-major float32/float64 slices, and on BF16 or
// F16 weights as []uint16.
//
// API:
//   - Gemm: C = op(A) op(B) + beta C, row-major, float32 or float64. At
//     most four rows of A against a transposed B (a Linear's weight, a
//     decoding step's product) go to the float32 GEMV (gemv.go), which
//     reads B once, in place, split over the cores.
//   - Sum: a float32 sum in the GEMV's lane order, one pass over memory.
//   - 16-bit weights (half.go, halfgemm.go, halfgemv.go), for models kept in
//     their file's BF16 or F16 and read in place: a Half names the format
//     (BF16, F16), weights are []uint16 bit patterns, leading dimensions in
//     elements. GemmHalf(h, transA, transB, m, n, k, a, lda, b, ldb, beta, c,
//     ldc) is Gemm with a 16-bit B and float32 A and C: a Linear's weight
//     (out, in) with transB, Conv1D's (in, out) without, and the LM head's (V,
//     d). GemvHalf(h, y, w, x, rows, cols) is y = W x, the decoder's product.
//     Widen(h, dst, src) widens a run, EmbedRows(h, dst, table, d, ids) is the
//     embedding lookup, and Half.ToFloat32 widens one value; GemmBF16,
//     GemmF16, GemvBF16, GemvF16, WidenBF16 and WidenF16 fix the format. The
//     promise: C gets bit for bit what Gemm gives over the same weights
//     widened to float32, on each path, for any shape, stride and flags.
//     Widening is exact (BF16 is a 16-bit shift; F16 is VCVTPH2PS (x86's f16c)
//     in the assembly and an exact conversion in Go, subnormals, infinities
//     and NaN values included, the two agreeing on all 65,536 values), and
//     each product goes to the kernel Gemm would use, which widens as it
//     reads: the GEMV's assembly widens each 16 weights as it loads them and
//     does the float32 kernel's operations after (halfgemv_amd64.s, with a
//     software prefetch per row stream), and sgemm and sgemmGo widen B as they
//     pack it (a 16-bit B is never read in place). AVX-512 BF16's dot product
//     VDPBF16PS is not used: it needs A rounded to BF16 and sums pairs of
//     products in its own order, which breaks the promise.
//   - ExpShift, MaxOf, ScaleBy, SoftmaxGradRow: float32 softmax rows;
//     GELU, GELUGrad: float32 GELU (tanh form) through ExpShift; SiLUMul,
//     SiLUMulGrad: SwiGLU's silu(g)·u and its gradient, the same way; AddTo,
//     SubTo, MulTo, DivTo, ScaleTo: float32 element-wise arithmetic of
//     two vectors, or a vector and a scalar (the residual adds, and
//     internal/engine's arithmetic for Gorgonia's own ops); LayerNormStats,
//     LayerNormRow, LayerNormGradRow, LayerNormGradWRow: LayerNorm's rows,
//     with or without a bias; RMSNormStats and RMSNormGradRow with them
//     (mean 0): RMSNorm's.
//   - Adam (with AdamStep): Adam's per-element update of weights and
//     float64 moments, for train.Adam; float32 weights with float32
//     gradients in four float64 lanes of AVX2 assembly, because its square
//     root and two divisions per element were ~92% of the optimizer's time.
//   - ParallelFor (and ParallelMinWork, below which it stays on the caller's
//     goroutine); Concurrently, which runs parts side by side and meanwhile
//     gives each part's loops its share of the cores (Workers); Scratch and
//     PutScratch, a pool of float32 buffers. The parts of a parallel loop
//     run on the caller's goroutine and on helper goroutines (parallel.go),
//     which wait for the next loop spinning for half a millisecond before
//     they park: waking a parked one on another core cost 70-150 µs here.
//     The helpers run with debug.SetPanicOnFault, and a panic in a part
//     (a fault reading weights mapped from a file truncated since) is
//     raised again on the loop's caller once every part is done, for the
//     caller to recover (internal/ops' ReadMapped).
//   - HugePages: puts float32 slices' memory in 2 MiB pages (Linux's
//     MADV_COLLAPSE), for weights a decoder streams every step.
//   - Active, Check, Backend: which path is in use; Detected: the best
//     this CPU runs.
//
// Paths: each kernel has a generic (pure Go) form and amd64 assembly forms.
// At start-up the best the CPU runs is chosen: AVX512 (the AVX-512 GEMM
// tiles plus the AVX2 ones), AVX2 (AVX2 + FMA + f16c: 6x16 GEMM tiles,
// 8-lane exp) or Generic (the assembly's operations in Go). The environment
// variable ATTNSCOPE_KERNEL=generic|avx2|avx512 forces one (auto or empty:
// the default); a path the CPU lacks or an unknown value keeps the default and
// makes Check return an error naming the value and the paths allowed, which
// the commands report. CI runs this package's and the layers' tests once
// per path. Other architectures have only the generic path.
//
// float64 GEMMs always go to the BLAS. With the openblas build tag every GEMM
// goes to OpenBLAS (by cgo, internal/openblas), on one thread, large
// products split by rows over the cores here.
//
// Accuracy: the float32 GEMM accumulates in float32, as any BLAS does;
// ExpShift is accurate to a few float32 ulps (see their tests). Every
// kernel gives the same bits on every path (TestSameBitsOnEveryPath, and
// cmd/train's TestSameRunOnEveryKernelPath for a whole training run), so a
// config trains to the same weights on any amd64 CPU: each element of a
// GEMM is one chain of fused multiply-adds per 256-deep block whatever the
// tile (sgemmGo in Go), the exp is one polynomial with the same fusions in
// every lane (expLane), GELU's Go loops fuse where its assembly does, the
// row sums fold eight or sixteen lanes in one fixed order, and the
// element-wise arithmetic, LayerNorm and RMSNorm rows and Adam do the Go
// loops' operations, none fused. The generic path computes the fused
// multiply-adds exactly in Go (fma32), which costs it speed: its float32
// GEMM is about 15 times slower than gonum's, a training step 8-14 times
// (docs/benchmarks.md); the AVX2 and AVX-512 paths pay nothing.
// Outside the guarantee: the openblas build (OpenBLAS sums in its own
// order), other architectures (Go fuses multiply-adds of its own there, so
// their generic path keeps gonum's faster GEMM) and builds with GOAMD64=v3
// or above (the same); float64 GEMMs go to gonum on every path.
package kernels
