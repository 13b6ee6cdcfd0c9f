package layers

// expShifted sets y[i] = exp(scale*(x[i] - shift)) for i < n and returns their
// sum (AVX2 + FMA, vexp_amd64.s; relative error a few float32 ulps).
//
//go:noescape
func expShifted(n int, x *float32, scale, shift float32, y *float32) float32
