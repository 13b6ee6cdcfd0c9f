package kernels

import "math"

// SwiGLU's element-wise part in float32, silu(g) u with silu(g) = g s and
// s = sigmoid(g), through the vector exp kernel as GELU:
//
//	silu(g) u    = g s u
//	silu'(g)     = s + g s (1 - s)
//
// with e = exp(-|g|) <= 1 (never overflows): s = negPick(g, e, 1) / (1 + e)
// and s (1 - s) = e / (1 + e)^2, which keeps its relative precision where
// s is within an ulp of 1. One vector exp and one short loop per block of
// expBlock elements, and on the AVX2 and AVX-512 paths the same steps in one
// assembly loop over eight lanes (vexp_amd64.s). The assembly does the Go
// loop's float32 operations in the same order, none fused, and takes e from
// the same exp kernel as ExpShift, so an element's bits do not depend on
// whether it falls in the vector part or the tail
// (TestSiLUMulSameBitsInVectorAndTail).

// SiLUMul sets y = silu(g) * u element by element, for slices of one length.
// With u = dy it is also the gradient of silu(g) * u with respect to u.
func SiLUMul(g, u, y []float32) {
	u, y = u[:len(g)], y[:len(g)]
	n := vectorPart(len(g))
	if n > 0 {
		siluMulFloat32s(n, &g[0], &u[0], &y[0])
	}
	siluMulBlocks(g[n:], u[n:], y[n:])
}

func siluMulBlocks(g, u, y []float32) {
	var e [expBlock]float32
	for lo := 0; lo < len(g); lo += expBlock {
		gs := g[lo:min(lo+expBlock, len(g))]
		us, ys, es := u[lo:lo+len(gs)], y[lo:lo+len(gs)], e[:len(gs)]
		negAbsExp(gs, es)
		for i, v := range gs {
			ys[i] = v * negPick(v, es[i], 1) / (1 + es[i]) * us[i]
		}
	}
}

// SiLUMulGrad sets dg = dy * u * silu'(g), the gradient of silu(g) * u with
// respect to g, for slices of one length.
func SiLUMulGrad(g, u, dy, dg []float32) {
	u, dy, dg = u[:len(g)], dy[:len(g)], dg[:len(g)]
	n := vectorPart(len(g))
	if n > 0 {
		siluMulGradFloat32s(n, &g[0], &u[0], &dy[0], &dg[0])
	}
	siluMulGradBlocks(g[n:], u[n:], dy[n:], dg[n:])
}

func siluMulGradBlocks(g, u, dy, dg []float32) {
	var e [expBlock]float32
	for lo := 0; lo < len(g); lo += expBlock {
		gs := g[lo:min(lo+expBlock, len(g))]
		us, dys, dgs, es := u[lo:lo+len(gs)], dy[lo:lo+len(gs)], dg[lo:lo+len(gs)], e[:len(gs)]
		negAbsExp(gs, es)
		for i, v := range gs {
			ei := es[i]
			r := 1 / (1 + ei)
			s := negPick(v, ei, 1) * r
			dgs[i] = dys[i] * us[i] * (s + v*ei*r*r)
		}
	}
}

// negAbsExp sets e = exp(-|g|) (ExpShift, so on the AVX2 paths the
// assembly's exp bit for bit).
func negAbsExp(g, e []float32) {
	for i, v := range g {
		e[i] = negAbs(v)
	}
	ExpShift(e, e, 1, 0)
}

// negAbs is -|v|, without a branch.
func negAbs(v float32) float32 { return math.Float32frombits(math.Float32bits(v) | 1<<31) }
