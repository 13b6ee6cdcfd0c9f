package kernels

import "unsafe"

// sgemmGoOnGeneric sends the generic path's float32 GEMMs to sgemmGo, so
// that they give the assembly's bits (the generic path then runs them
// several times slower than gonum did: docs/benchmarks.md).
const sgemmGoOnGeneric = true

// Implemented in sgemm_amd64.s.
func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

//go:noescape
func sgemmKernel6x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int)

//go:noescape
func sgemmKernel12x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int)

//go:noescape
func sgemmKernel12x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int)

//go:noescape
func sgemmKernel6x16Masked(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int, mask uint16)

//go:noescape
func sgemmKernel6x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int)

// haveAVX2FMA reports whether the CPU and the OS support AVX2 and FMA3, which
// the float32 GEMM and exp kernels need, and F16C, which the F16 weights'
// kernels widen with (every AVX2 CPU has it).
func haveAVX2FMA() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fma, osxsave, avx, f16c = 1 << 12, 1 << 27, 1 << 28, 1 << 29
	if ecx1&fma == 0 || ecx1&osxsave == 0 || ecx1&avx == 0 || ecx1&f16c == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 { // the OS saves XMM and YMM state
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0 // AVX2
}

// haveAVX512 reports whether the CPU and the OS support AVX-512F (ZMM state
// saved), which sgemmKernel6x32 needs.
func haveAVX512() bool {
	if !haveAVX2FMA() {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 { // XMM, YMM, opmask and both ZMM halves
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<16) != 0 // AVX512F
}

// detectPath returns the best path this CPU and OS run.
func detectPath() Path {
	switch {
	case haveAVX512():
		return AVX512
	case haveAVX2FMA():
		return AVX2
	}
	return Generic
}

// gemvDotsAVX512 and gemvDotsAVX2 are gemvDots' kernels (gemv_amd64.s).
//
//go:noescape
func gemvDotsAVX512(k16 int, x, w *float32, ldw, rows int, out *float32)

//go:noescape
func gemvDotsAVX2(k16 int, x, w *float32, ldw, rows int, out *float32)

// sumLanesAVX512 and sumLanesAVX2 are Sum's kernels (gemv_amd64.s).
//
//go:noescape
func sumLanesAVX512(k16 int, x *float32) float32

//go:noescape
func sumLanesAVX2(k16 int, x *float32) float32

// packTransposed16AVX2 is packTransposed16's loop over whole groups of 8
// steps (sgemm_amd64.s).
//
//go:noescape
func packTransposed16AVX2(kc8 int, b *float32, ldb int, panel *float32)

// addScaledRowsAVX512 is AddScaledRows' kernel (rows_amd64.s).
//
//go:noescape
func addScaledRowsAVX512(n int, y, x *float32, rows int, a *float32, lda int)

// prefetchRows is PrefetchRows' kernel (prefetch_amd64.s).
//
//go:noescape
func prefetchRows(p unsafe.Pointer, rows, strideBytes, rowBytes int)
