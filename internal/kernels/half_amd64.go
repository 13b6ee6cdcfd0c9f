package kernels

// The 16-bit weights' GEMV kernels (halfgemv_amd64.s): gemvDotsAVX512's
// and gemvDotsAVX2's over BF16 or F16 rows.

//go:noescape
func gemvDotsBF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)

//go:noescape
func gemvDotsF16AVX512(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)

//go:noescape
func gemvDotsBF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)

//go:noescape
func gemvDotsF16AVX2(k16 int, x *float32, w *uint16, ldw, rows int, out *float32)

// Widen's loops (widen_amd64.s), n a multiple of 16 (AVX-512) or 8 (AVX2).

//go:noescape
func widenBF16AVX512(n int, dst *float32, src *uint16)

//go:noescape
func widenF16AVX512(n int, dst *float32, src *uint16)

//go:noescape
func widenBF16AVX2(n int, dst *float32, src *uint16)

//go:noescape
func widenF16AVX2(n int, dst *float32, src *uint16)
