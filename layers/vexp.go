package layers

import "math"

// expShift sets y[i] = exp(scale*(x[i] - shift)) for every i < len(x) and
// returns their sum: eight lanes at a time with the AVX2 kernel of
// vexp_amd64.s when the CPU has it (relative error a few float32 ulps,
// inputs below -87 give ~1e-38 instead of 0), else with math.Exp.
func expShift(x, y []float32, scale, shift float32) float32 {
	if len(x) == 0 {
		return 0
	}
	y = y[:len(x)]
	if cpuAVX2FMA {
		return expShifted(len(x), &x[0], scale, shift, &y[0])
	}
	var sum float32
	for i, v := range x {
		y[i] = float32(math.Exp(float64(scale) * (float64(v) - float64(shift))))
		sum += y[i]
	}
	return sum
}
