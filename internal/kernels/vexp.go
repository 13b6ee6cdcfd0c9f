package kernels

import "math"

// ExpShift sets y[i] = exp(scale*(x[i] - shift)) for every i < len(x) and
// returns their sum: eight lanes at a time with the AVX2 kernel of
// vexp_amd64.s on the AVX2 and AVX-512 paths (relative error a few float32 ulps,
// inputs below -87 give ~1e-38 instead of 0), else with math.Exp.
func ExpShift(x, y []float32, scale, shift float32) float32 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if useAVX2 {
		return expShifted(len(x), &x[0], scale, shift, &y[0])
	}
	var sum float32
	for i, v := range x {
		y[i] = float32(math.Exp(float64(scale) * (float64(v) - float64(shift))))
		sum += y[i]
	}
	return sum
}

// MaxOf returns the largest entry of a non-empty x.
func MaxOf(x []float32) float32 {
	n := len(x) &^ 7
	m := x[0]
	if useAVX2 && n > 0 {
		m = maxFloat32s(n, &x[0])
	} else {
		n = 0
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

// SoftmaxGradRow sets dx = scale * y * (dy - sum(y*dy)) for one row, the
// sum in float32 (eight lanes, then the tail).
func SoftmaxGradRow(y, dy, dx []float32, scale float32) {
	dy, dx = dy[:len(y)], dx[:len(y)]
	n := len(y) &^ 7
	if !useAVX2 {
		n = 0
	}
	var dot float32
	if n > 0 {
		dot = dotFloat32s(n, &y[0], &dy[0])
	}
	for i := n; i < len(y); i++ {
		dot += y[i] * dy[i]
	}
	if n > 0 {
		softmaxGradFloat32s(n, &y[0], &dy[0], &dx[0], scale, dot)
	}
	for i := n; i < len(y); i++ {
		dx[i] = scale * y[i] * (dy[i] - dot)
	}
}
