package kernels

import (
	"fmt"
	"math"
)

// 16-bit weights: BF16 and F16 values as a file stores them (uint16 bit
// patterns, little-endian in the file, native here), read by the kernels
// in place and widened to float32 as they are read. Widening is exact for
// both (every BF16 and every F16 value is a float32 value), so a product
// over 16-bit weights is the float32 product over the widened weights, and
// the kernels keep that to the bit (halfgemm.go).

// Half is a 16-bit floating-point format a weight may be stored in.
type Half uint8

const (
	// BF16 is bfloat16: float32's sign, exponent and top 7 mantissa bits;
	// widening is a 16-bit shift.
	BF16 Half = iota + 1
	// F16 is IEEE 754 binary16: 5 exponent bits, 10 mantissa bits, with
	// subnormals; widened by F16C's VCVTPH2PS in the assembly and by
	// f16ToFloat32 in Go, which agree on all 65,536 values.
	F16
)

func (h Half) String() string {
	switch h {
	case BF16:
		return "BF16"
	case F16:
		return "F16"
	}
	return fmt.Sprintf("Half(%d)", uint8(h))
}

// mustBeFormat panics unless h is BF16 or F16: a Half that is neither is a
// caller's bug (its zero value, a value cast from elsewhere), which would
// otherwise read the weights in the wrong format.
func (h Half) mustBeFormat() {
	if h != BF16 && h != F16 {
		panic("kernels: " + h.String() + " is not a 16-bit format (BF16 or F16)")
	}
}

// ToFloat32 is the float32 value of one 16-bit value in format h.
func (h Half) ToFloat32(v uint16) float32 {
	if h == BF16 {
		return math.Float32frombits(uint32(v) << 16)
	}
	return f16ToFloat32(v)
}

// f16ToFloat32 widens an IEEE binary16 value exactly: normals by moving
// the exponent and mantissa fields, subnormals (mantissa × 2⁻²⁴, a normal
// float32) by scaling, infinities kept, and NaNs quieted (the top mantissa
// bit set) with their payload, as VCVTPH2PS does.
func f16ToFloat32(v uint16) float32 {
	sign := uint32(v>>15) << 31
	exp := uint32(v>>10) & 0x1f
	man := uint32(v) & 0x3ff
	switch {
	case exp == 0x1f && man != 0: // NaN
		return math.Float32frombits(sign | 0x7fc00000 | man<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000)
	case exp == 0 && man == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: man × 2⁻²⁴, exact
		return math.Float32frombits(sign | math.Float32bits(float32(man)*0x1p-24))
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// Widen sets dst[i] to src[i] widened from format h, for every i < len(src)
// (dst at least as long).
func Widen(h Half, dst []float32, src []uint16) {
	h.mustBeFormat()
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	step := 0 // of the assembly loop
	switch {
	case useAVX512:
		step = 16
	case useAVX2:
		step = 8
	}
	n := 0
	if step > 0 {
		n = len(src) / step * step
	}
	if n > 0 {
		widenAsm(h, step, n, &dst[0], &src[0])
	}
	widenGo(h, dst[n:], src[n:])
}

// widenAsm runs Widen's assembly loop of step 16 (AVX-512) or 8 (AVX2) over
// n values, a multiple of step.
func widenAsm(h Half, step, n int, dst *float32, src *uint16) {
	switch {
	case step == 16 && h == BF16:
		widenBF16AVX512(n, dst, src)
	case step == 16:
		widenF16AVX512(n, dst, src)
	case h == BF16:
		widenBF16AVX2(n, dst, src)
	default:
		widenF16AVX2(n, dst, src)
	}
}

// WidenBF16 is Widen(BF16, dst, src).
func WidenBF16(dst []float32, src []uint16) { Widen(BF16, dst, src) }

// WidenF16 is Widen(F16, dst, src).
func WidenF16(dst []float32, src []uint16) { Widen(F16, dst, src) }

// widenGo is Widen in Go.
func widenGo(h Half, dst []float32, src []uint16) {
	dst = dst[:len(src)]
	if h == BF16 {
		for i, v := range src {
			dst[i] = math.Float32frombits(uint32(v) << 16)
		}
		return
	}
	for i, v := range src {
		dst[i] = f16ToFloat32(v)
	}
}

// EmbedRows is the embedding lookup over a 16-bit table (V, d) row-major:
// row n of dst (d wide) is row ids[n] of table, widened. Ids are the
// caller's to check: one outside [0, V) panics.
func EmbedRows(h Half, dst []float32, table []uint16, d int, ids []int) {
	for n, id := range ids {
		Widen(h, dst[n*d:(n+1)*d], table[id*d:(id+1)*d])
	}
}
