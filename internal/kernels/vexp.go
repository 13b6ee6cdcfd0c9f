package kernels

import "math"

// ExpShift sets y[i] = exp(scale*(x[i] - shift)) for every i < len(x) and
// returns their sum: eight lanes at a time with the AVX2 kernel of
// vexp_amd64.s on the AVX2 and AVX-512 paths, else with expShiftGo, its
// operations in Go, so every path gives the same bits (relative error a
// few float32 ulps; arguments below -87 give 0).
func ExpShift(x, y []float32, scale, shift float32) float32 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if useAVX2 {
		return expShifted(len(x), &x[0], scale, shift, &y[0])
	}
	return expShiftGo(x, y, scale, shift)
}

// expShiftGo is expShifted in Go: element i goes through expLane and into
// lane i%8 of the sum, and the lanes are folded as the kernel folds them.
func expShiftGo(x, y []float32, scale, shift float32) float32 {
	var lanes [8]float32
	for i, v := range x {
		e := expLane(v, scale, shift)
		y[i] = e
		lanes[i%8] += e
	}
	return foldSum8(lanes)
}

// The constants of the assembly's EXP8 (vexp_amd64.s), by their bits.
var (
	expLog2e = math.Float32frombits(0x3fb8aa3b)
	expLn2Hi = math.Float32frombits(0x3f318000)
	expLn2Lo = math.Float32frombits(0xb95e8083)
	expPoly  = [...]float32{ // c5 down to c0
		math.Float32frombits(0x39506967), math.Float32frombits(0x3ab743ce),
		math.Float32frombits(0x3c088908), math.Float32frombits(0x3d2aa9c1),
		math.Float32frombits(0x3e2aaaaa), math.Float32frombits(0x3f000000),
	}
)

const expHi, expLo = 88, -87 // the clamps

// expLane is one lane of EXP8, exp(scale*(v - shift)), operation for
// operation: VMINPS and VMAXPS return their second source (the argument)
// when it is NaN, the compare keeps NaN lanes, and the multiply-adds are
// fma32.
func expLane(v, scale, shift float32) float32 {
	x := (v - shift) * scale
	keep := !(x < expLo)
	if expHi < x {
		x = expHi
	}
	if expLo > x {
		x = expLo
	}
	n := float32(math.RoundToEven(float64(x * expLog2e)))
	x = fma32(-n, expLn2Hi, x)
	x = fma32(-n, expLn2Lo, x)
	p := expPoly[0]
	for _, c := range expPoly[1:] {
		p = fma32(x, p, c)
	}
	p = fma32(x*x, p, x) + 1
	y := p * math.Float32frombits(uint32(int32(n)+127)<<23) // 2^n, n in [-126, 127]
	if !keep {
		return 0
	}
	return y
}

// foldSum8 adds eight float32 lanes as REDUCE8 does: lane l + lane l+4,
// then l + l+2, then the last two.
func foldSum8(lanes [8]float32) float32 {
	for width := 4; width >= 1; width /= 2 {
		for l := 0; l < width; l++ {
			lanes[l] += lanes[l+width]
		}
	}
	return lanes[0]
}

// MaxOf returns the largest entry of a non-empty x: the whole groups of
// eight in eight lanes (maxFloat32s, or maxLanesGo on the generic path,
// which compare as VMAXPS, so a NaN or the sign of a zero goes the same way
// on every path), then the rest in order.
func MaxOf(x []float32) float32 {
	n := len(x) &^ 7
	m := x[0]
	switch {
	case n == 0:
	case useAVX2:
		m = maxFloat32s(n, &x[0])
	default:
		m = maxLanesGo(x[:n])
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

// maxLanesGo is maxFloat32s in Go: lane l keeps the largest of x[l],
// x[l+8], ..., the lanes fold as REDUCE8. vmax is VMAXPS's choice.
func maxLanesGo(x []float32) float32 {
	var lanes [8]float32
	copy(lanes[:], x)
	for p := 8; p < len(x); p += 8 {
		for l := range lanes {
			lanes[l] = vmax(lanes[l], x[p+l])
		}
	}
	// REDUCE8's first VMAXPS takes the high half first, the others the low.
	for l := range 4 {
		lanes[l] = vmax(lanes[l+4], lanes[l])
	}
	for width := 2; width >= 1; width /= 2 {
		for l := 0; l < width; l++ {
			lanes[l] = vmax(lanes[l], lanes[l+width])
		}
	}
	return lanes[0]
}

// vmax is VMAXPS's a > b ? a : b, which returns b when either is NaN or
// both are zeros.
func vmax(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// SoftmaxGradRow sets dx = scale * y * (dy - sum(y*dy)) for one row, the
// sum in float32: eight lanes of fused multiply-adds (dotFloat32s, or
// dotLanesGo) folded, then the tail.
func SoftmaxGradRow(y, dy, dx []float32, scale float32) {
	dy, dx = dy[:len(y)], dx[:len(y)]
	n := len(y) &^ 7
	var dot float32
	switch {
	case n == 0:
	case useAVX2:
		dot = dotFloat32s(n, &y[0], &dy[0])
	default:
		dot = dotLanesGo(y[:n], dy[:n])
	}
	for i := n; i < len(y); i++ {
		dot += float32(y[i] * dy[i])
	}
	if n > 0 && useAVX2 {
		softmaxGradFloat32s(n, &y[0], &dy[0], &dx[0], scale, dot)
	} else {
		n = 0
	}
	for i := n; i < len(y); i++ {
		dx[i] = scale * y[i] * (dy[i] - dot)
	}
}

// dotLanesGo is dotFloat32s in Go: lane i%8 accumulates x[i]*y[i] fused,
// the lanes fold as REDUCE8.
func dotLanesGo(x, y []float32) float32 {
	var lanes [8]float32
	for i, v := range x {
		lanes[i%8] = fma32(v, y[i], lanes[i%8])
	}
	return foldSum8(lanes)
}
