package kernels

import "math"

// GELU in float32 through the vector exp kernel. With u = sqrt(2/pi) (x +
// 0.044715 x^3), 0.5 (1 + tanh u) = sigmoid(2u), so
//
//	GELU(x)  = x s,                 s = sigmoid(2u)
//	GELU'(x) = s + 2 x s (1 - s) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
//
// sigmoid is formed from e = exp(-|2u|) <= 1 (never overflows): s = 1/(1+e)
// for u >= 0 and e/(1+e) below, and s (1 - s) = e/(1+e)^2 either way.
// math.Tanh in float64 cost 15-60 ns an element, growing as training moved
// the inputs out of its polynomial range (see cmd/bench/NOTES.md); this is
// one vector exp and two short loops per block of expBlock elements, and on
// the AVX2 and AVX-512 paths the same steps in one assembly loop over eight
// lanes (vexp_amd64.s), the Go loops doing only the last len%8 elements.
// The Go loops do the assembly's operations in its order, fusing (fma32)
// where it fuses, so an element's bits depend neither on the path nor on
// whether it falls in the vector part or the tail
// (TestGELUSameBitsOnEveryPath).

// expBlock is the number of elements done per exp call (GELU's and
// SiLUMul's): the scratch lives on the stack and stays in L1.
const expBlock = 256

const (
	geluC32  = float32(0.7978845608028654) // sqrt(2/pi)
	geluA32  = float32(0.044715)
	geluA332 = float32(3 * 0.044715)
)

// GELU sets y = GELU(x), len(y) >= len(x).
func GELU(x, y []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		geluFloat32s(n, &x[0], &y[0])
	}
	geluBlocks(x[n:], y[n:])
}

// vectorPart is how many of n elements the eight-lane assembly loops take:
// a multiple of 8 on the AVX2 and AVX-512 paths, else none.
func vectorPart(n int) int {
	if !useAVX2 {
		return 0
	}
	return n &^ 7
}

func geluBlocks(x, y []float32) {
	var e [expBlock]float32
	for lo := 0; lo < len(x); lo += expBlock {
		xs := x[lo:min(lo+expBlock, len(x))]
		ys := y[lo : lo+len(xs)]
		negAbs2u(xs, e[:len(xs)])
		ExpShift(e[:len(xs)], e[:len(xs)], 1, 0)
		for i, v := range xs {
			ei := e[i]
			ys[i] = v * negPick(v, ei, 1) / (1 + ei)
		}
	}
}

// GELUGrad sets dx = dy * GELU'(x).
func GELUGrad(x, dy, dx []float32) {
	n := vectorPart(len(x))
	if n > 0 {
		geluGradFloat32s(n, &x[0], &dy[0], &dx[0])
	}
	geluGradBlocks(x[n:], dy[n:], dx[n:])
}

func geluGradBlocks(x, dy, dx []float32) {
	var e [expBlock]float32
	for lo := 0; lo < len(x); lo += expBlock {
		xs := x[lo:min(lo+expBlock, len(x))]
		dys, dxs := dy[lo:lo+len(xs)], dx[lo:lo+len(xs)]
		negAbs2u(xs, e[:len(xs)])
		ExpShift(e[:len(xs)], e[:len(xs)], 1, 0)
		for i, v := range xs {
			ei := e[i]
			r := 1 / (1 + ei)
			s := negPick(v, ei, 1) * r
			ss := ei * r * r // s (1 - s)
			poly := fma32(v, geluA332*v, 1)
			dxs[i] = fma32(poly, (v+v)*ss*geluC32, s) * dys[i]
		}
	}
}

// negPick returns neg when v's sign bit is set, else pos, without a branch:
// the signs of GELU's inputs are random, and a mispredicted branch per
// element cost more than the rest of the loop (8 ns an element here).
// u has the sign of x (x + 0.044715 x^3 = x (1 + 0.044715 x^2)).
func negPick(v, neg, pos float32) float32 {
	m := uint32(int32(math.Float32bits(v)) >> 31)
	return math.Float32frombits(math.Float32bits(neg)&m | math.Float32bits(pos)&^m)
}

// negAbs2u sets z = -|2u(x)| = -2 sqrt(2/pi) |x + 0.044715 x^3|.
func negAbs2u(x, z []float32) {
	for i, v := range x {
		u := fma32(v*v*v, geluA32, v) * geluC32
		z[i] = negAbs(u + u)
	}
}
