package kernels

import "math"

// fma32 is x*y + z rounded once to float32, what the assembly's fused
// multiply-adds (VFMADD...PS) compute, in portable Go: the generic path
// uses it wherever the assembly fuses, so that both give the same bits. Go
// has no float32 FMA, and float32(math.FMA(x, y, z)) rounds twice, to
// float64 and then to float32, which differs from one rounding when the
// float64 sum falls exactly halfway between two float32s.
//
// The product of two float32s is exact in float64 (24+24 bits of 53), so
// only the sum rounds. Its float64 rounding s gives the float32 the exact
// sum rounds to unless s is a float32 halfway point (or is below float32's
// normal range, where the halfway points lie elsewhere); those rare sums
// are rounded to odd in float64 first (Boldo and Melquiond: rounding to
// odd with 2 or more extra bits, then to nearest, is rounding once).
func fma32(x, y, z float32) float32 {
	p := float64(x) * float64(y)
	s := p + float64(z)
	if mayRoundTwice(s) {
		s = roundedToOdd(p, float64(z), s)
	}
	return float32(s)
}

// mayRoundTwice reports whether float32(s) may differ from the float32 the
// exact sum rounds to, s being the sum rounded to float64: s is a normal
// float32's halfway point, or nonzero below float32's normal range. Hot
// loops write fma32 out with it, since fma32 is too large to inline.
func mayRoundTwice(s float64) bool {
	const halfway = 1 << 28      // float64's 29 bits below a normal float32's last
	const minNormal = 1023 - 126 // float32's smallest normal exponent, biased as float64's
	b := math.Float64bits(s)
	return b&(1<<29-1) == halfway || b>>52&0x7ff < minNormal && b<<1 != 0
}

// roundedToOdd returns a + b rounded to odd, given s = a + b rounded to
// nearest: s itself when exact or odd, else its neighbour towards the exact
// sum (whose last bit is then 1). The rounding error comes from TwoSum
// (Knuth), exact in float64. It is kept out of line so that fma32's common
// path inlines into the loops.
//
//go:noinline
func roundedToOdd(a, b, s float64) float64 {
	bv := s - a
	e := (a - (s - bv)) + (b - bv)
	bits := math.Float64bits(s)
	if e == 0 || bits&1 == 1 || math.IsNaN(e) {
		return s
	}
	if (e > 0) == (s > 0) {
		return math.Float64frombits(bits + 1)
	}
	return math.Float64frombits(bits - 1)
}
