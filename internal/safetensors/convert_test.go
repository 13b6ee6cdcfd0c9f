package safetensors

import (
	"math"
	"testing"
)

// halfByArithmetic is the value of IEEE binary16 bits h computed from the
// standard's formula, (-1)^s · 2^(e-15) · 1.m (or 2^-14 · 0.m when e is 0),
// rather than by moving bits as halfToFloat32 does. It is only meaningful
// for finite values.
func halfByArithmetic(h uint16) float64 {
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	v := math.Ldexp(m/1024, -14)
	if e != 0 {
		v = math.Ldexp(1+m/1024, e-15)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// TestHalfToFloat32EveryValue compares all 65536 halfs with the arithmetic
// reference: finite ones by value and sign (so -0 stays -0), infinities by
// sign, NaNs with their payload and sign kept.
func TestHalfToFloat32EveryValue(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := halfToFloat32(h)
		gotBits := math.Float32bits(got)
		negative := h&0x8000 != 0
		if gotBits>>31 == 1 != negative {
			t.Errorf("half %#04x: sign of %v is wrong", h, got)
		}
		switch e, m := h>>10&0x1f, uint32(h&0x3ff); {
		case e == 0x1f && m == 0:
			if !math.IsInf(float64(got), 0) {
				t.Errorf("half %#04x: %v, want an infinity", h, got)
			}
		case e == 0x1f:
			if !math.IsNaN(float64(got)) || gotBits&0x7fffff != m<<13 {
				t.Errorf("half %#04x: %#08x, want a NaN with payload %#x", h, gotBits, m<<13)
			}
		default:
			if want := halfByArithmetic(h); float64(got) != want {
				t.Errorf("half %#04x: %v, want %v", h, got, want)
			}
		}
	}
}

// TestDecodeFloats decodes hand-built bit patterns of known value, two
// little-endian bytes each, into both float types.
func TestDecodeFloats(t *testing.T) {
	cases := []struct {
		dtype string
		bits  uint16
		want  float64
	}{
		{F16, 0x3c00, 1},
		{F16, 0xc000, -2},
		{F16, 0x7bff, 65504},
		{F16, 0x0001, math.Ldexp(1, -24)},
		{F16, 0x03ff, math.Ldexp(1023, -24)},
		{F16, 0x0400, math.Ldexp(1, -14)},
		{F16, 0x3555, 0.333251953125},
		{F16, 0x8000, math.Copysign(0, -1)},
		{F16, 0x7c00, math.Inf(1)},
		{F16, 0xfc00, math.Inf(-1)},
		{F16, 0x7e00, math.NaN()},
		{BF16, 0x3f80, 1},
		{BF16, 0xc000, -2},
		{BF16, 0x4049, 3.140625},
		{BF16, 0x7f7f, math.Ldexp(255, 120)},
		{BF16, 0x0001, math.Ldexp(1, -133)},
		{BF16, 0x8000, math.Copysign(0, -1)},
		{BF16, 0xff80, math.Inf(-1)},
		{BF16, 0x7fc0, math.NaN()},
	}
	for _, c := range cases {
		src := []byte{byte(c.bits), byte(c.bits >> 8)}
		var f32 [1]float32
		var f64 [1]float64
		decodeFloats(f32[:], src, c.dtype)
		decodeFloats(f64[:], src, c.dtype)
		if !sameFloat(float64(f32[0]), c.want) || !sameFloat(f64[0], c.want) {
			t.Errorf("%s %#04x: float32 %v, float64 %v, want %v", c.dtype, c.bits, f32[0], f64[0], c.want)
		}
	}
}

// sameFloat is equality that tells -0 from 0 and takes NaN as equal to NaN.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}
