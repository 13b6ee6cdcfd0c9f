// Package kernels holds the numerical inner loops the custom ops run on:
// GEMM, the vector exponential and row kernels of the softmax, and the
// parallel loop that spreads rows over the cores. It knows nothing of
// Gorgonia: it works on row-major float32/float64 slices.
//
// API:
//   - Gemm: C = op(A) op(B) + beta C, row-major, float32 or float64. At
//     most four rows of A against a transposed B (a Linear's weight, a
//     decoding step's product) go to the float32 GEMV (gemv.go), which
//     reads B once, in place, split over the cores.
//   - Sum: a float32 sum in the GEMV's lane order, one pass over memory.
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
//   - HugePages: puts float32 slices' memory in 2 MiB pages (Linux's
//     MADV_COLLAPSE), for weights a decoder streams every step.
//   - Active, Check, Backend: which path is in use.
//
// Paths: each kernel has a generic (pure Go) form and amd64 assembly forms.
// At start-up the best the CPU runs is chosen: AVX512 (the AVX-512 GEMM
// tiles plus the AVX2 ones), AVX2 (AVX2 + FMA: 6x16 GEMM tiles, 8-lane exp)
// or Generic (gonum's Sgemm/Dgemm and math.Exp). The environment variable
// ATTNSCOPE_KERNEL=generic|avx2|avx512 forces one (auto or empty: the
// default); a path the CPU lacks or an unknown value keeps the default and
// makes Check return an error naming the value and the paths allowed, which
// the commands report. CI runs this package's and the layers' tests once
// per path. Other architectures have only the generic path.
//
// float64 GEMMs always go to the BLAS. With the openblas build tag every GEMM
// goes to OpenBLAS (by cgo, internal/openblas), on one thread, large
// products split by rows over the cores here.
//
// Accuracy: the assembly GEMM accumulates in float32 lanes, as any BLAS
// does; ExpShift is accurate to a few float32 ulps (see its tests). A
// kernel's result may differ between paths in the last bits, never more than
// the tolerances the tests state. The exceptions give the same bits on
// every path: the element-wise arithmetic (each lane the Go loop's one IEEE
// operation), the float32 GEMV and Sum (16 lanes, products rounded before
// each sum, a fixed fold: gemv.go), and the LayerNorm and RMSNorm rows and Adam, whose assembly
// does the Go loops' float64 operations in the same order, none fused (as
// long as Go itself does not fuse them: it does from GOAMD64=v3 on, not at
// the default v1).
package kernels
