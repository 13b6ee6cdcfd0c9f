//go:build !amd64

package kernels

import "unsafe"

// The assembly kernels exist only on amd64; elsewhere only the generic path
// is detected, so these stubs are never called.

func detectPath() Path { return Generic }

// sgemmGoOnGeneric is false here: float32 GEMMs go to gonum, several times
// faster than sgemmGo's exact fused multiply-adds in Go. The same bits as
// amd64's are not promised on other architectures (Go fuses multiply-adds
// of its own there), so nothing is bought with the speed.
const sgemmGoOnGeneric = false

func sgemmKernel6x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int) {
	panic("kernels: no assembly GEMM kernel on this architecture")
}

func sgemmKernel6x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int) {
	panic("kernels: no assembly GEMM kernel on this architecture")
}

func sgemmKernel12x32(kc int, a *float32, rs, ps int, b0, b1 *float32, bs int, c *float32, ldc int, add int) {
	panic("kernels: no assembly GEMM kernel on this architecture")
}

func sgemmKernel12x16(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int) {
	panic("kernels: no assembly GEMM kernel on this architecture")
}

func sgemmKernel6x16Masked(kc int, a *float32, rs, ps int, b *float32, bs int, c *float32, ldc int, add int, mask uint16) {
	panic("kernels: no assembly GEMM kernel on this architecture")
}

func expShifted(n int, x *float32, scale, shift float32, y *float32) float32 {
	panic("kernels: no assembly exp kernel on this architecture")
}

func maxFloat32s(n int, x *float32) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func addFloat32s(n int, x, y, z *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func dotFloat32s(n int, x, y *float32) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func softmaxGradFloat32s(n int, y, dy, dx *float32, scale, dot float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func geluFloat32s(n int, x, y *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func geluGradFloat32s(n int, x, dy, dx *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func sum4Float32s(n int, x *float32, lanes *[4]float64) {
	panic("kernels: no assembly kernels on this architecture")
}

func sqDev4Float32s(n int, x *float32, mean float64, lanes *[4]float64) {
	panic("kernels: no assembly kernels on this architecture")
}

func layerNormFloat32s(n int, x, w, b *float32, mean, rstd float64, y *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func layerNormGradSums(n int, x, w, dy *float32, mean, rstd float64, lanes *[8]float64) {
	panic("kernels: no assembly kernels on this architecture")
}

func layerNormGradFloat32s(n int, x, w, dy *float32, mean, rstd, m1, m2 float64, dx *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func layerNormGradWFloat32s(n int, x, dy *float32, mean, rstd float64, dw *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func adamFloat32s(n int, w, grad *float32, m, v *float64, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func adamFloat32Moments(n int, w, grad, m, v *float32, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func mulFloat32s(n int, x, y, z *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func subFloat32s(n int, x, y, z *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func divFloat32s(n int, x, y, z *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func scaleToFloat32s(n int, x *float32, s float32, z *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func siluMulFloat32s(n int, x, u, y *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func siluMulGradFloat32s(n int, x, u, dy, dg *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func gemvDotsAVX512(k16 int, x, w *float32, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func gemvDotsAVX2(k16 int, x, w *float32, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func sumLanesAVX512(k16 int, x *float32) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func sumLanesAVX2(k16 int, x *float32) float32 {
	panic("kernels: no assembly kernels on this architecture")
}

func packTransposed16AVX2(kc8 int, b *float32, ldb int, panel *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func addScaledRowsAVX512(n int, y, x *float32, rows int, a *float32, lda int) {
	panic("kernels: no assembly kernels on this architecture")
}

// prefetchRows asks for nothing here: the hint is amd64's assembly only.
func prefetchRows(p unsafe.Pointer, rows, strideBytes, rowBytes int) {}

func gemvDotsBF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func gemvDotsF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func gemvDotsBF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func gemvDotsF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32) {
	panic("kernels: no assembly kernels on this architecture")
}

func widenBF16AVX512(n int, dst *float32, src *uint16) {
	panic("kernels: no assembly kernels on this architecture")
}

func widenF16AVX512(n int, dst *float32, src *uint16) {
	panic("kernels: no assembly kernels on this architecture")
}

func widenBF16AVX2(n int, dst *float32, src *uint16) {
	panic("kernels: no assembly kernels on this architecture")
}

func widenF16AVX2(n int, dst *float32, src *uint16) {
	panic("kernels: no assembly kernels on this architecture")
}
