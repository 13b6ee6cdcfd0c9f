package kernels

// expShifted sets y[i] = exp(scale*(x[i] - shift)) for i < n and returns their
// sum (AVX2 + FMA, vexp_amd64.s; relative error a few float32 ulps).
//
//go:noescape
func expShifted(n int, x *float32, scale, shift float32, y *float32) float32

// The row kernels below take n, a multiple of 8 (callers do the tail).

//go:noescape
func maxFloat32s(n int, x *float32) float32

//go:noescape
func scaleFloat32s(n int, x *float32, s float32)

//go:noescape
func dotFloat32s(n int, x, y *float32) float32

//go:noescape
func softmaxGradFloat32s(n int, y, dy, dx *float32, scale, dot float32)

// geluFloat32s and geluGradFloat32s are GELU and GELUGrad's loops over eight
// lanes, n a multiple of 8.

//go:noescape
func geluFloat32s(n int, x, y *float32)

//go:noescape
func geluGradFloat32s(n int, x, dy, dx *float32)
