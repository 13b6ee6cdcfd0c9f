package safetensors

import (
	"encoding/binary"
	"math"

	"github.com/pkg/errors"
)

// float is the element type a File's tensors decode into.
type float interface{ float32 | float64 }

// checkFloat refuses a tensor whose dtype does not convert to T.
func checkFloat[T float](in Info) error {
	switch in.DType {
	case F32, F64, F16, BF16:
		return nil
	}
	var zero T
	return errors.Errorf("tensor %q has dtype %s; only F32, F64, F16 and BF16 convert to %T", in.Name, in.DType, zero)
}

// decodeFloats converts the little-endian elements of dtype in src, whole
// elements only, into dst. F32 into float32 and F64 into float64 are bit
// for bit; F16 and BF16 are exact in both; F64 into float32 rounds to
// nearest, as a Go conversion does.
func decodeFloats[T float](dst []T, src []byte, dtype string) {
	le := binary.LittleEndian
	switch dtype {
	case F32:
		for i := range len(src) / 4 {
			dst[i] = T(math.Float32frombits(le.Uint32(src[4*i:])))
		}
	case F64:
		for i := range len(src) / 8 {
			dst[i] = T(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case F16:
		for i := range len(src) / 2 {
			dst[i] = T(halfToFloat32(le.Uint16(src[2*i:])))
		}
	case BF16:
		for i := range len(src) / 2 {
			dst[i] = T(math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16))
		}
	}
}

// halfToFloat32 converts an IEEE 754 binary16 value to the float32 of the
// same value: every half (subnormals, infinities, NaN payloads) is one.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // infinity, or NaN with its payload
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0: // normal: the exponent's bias goes from 15 to 127
		return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal, mant·2^-24, is a normal float32: shift the leading 1 up to
	// the implicit bit (bit 10), lowering the exponent from 2^-14 each step.
	e := uint32(127 - 14)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}

// Widen converts the little-endian elements of dtype (F32, F16 or BF16) in
// src into dst, exactly: BF16 is its 16 bits shifted up, F16 the float32
// of the same value, F32 bit for bit. dst holds len(src)/size elements.
func Widen(dst []float32, src []byte, dtype string) { decodeFloats(dst, src, dtype) }
