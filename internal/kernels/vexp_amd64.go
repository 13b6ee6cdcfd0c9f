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
func dotFloat32s(n int, x, y *float32) float32

//go:noescape
func softmaxGradFloat32s(n int, y, dy, dx *float32, scale, dot float32)

// geluFloat32s and geluGradFloat32s are GELU and GELUGrad's loops over eight
// lanes, n a multiple of 8.

//go:noescape
func geluFloat32s(n int, x, y *float32)

//go:noescape
func geluGradFloat32s(n int, x, dy, dx *float32)

// LayerNorm's row loops (layernorm_amd64.s) over four float64 lanes, n a
// multiple of 4; see layernorm.go for what each computes.

//go:noescape
func sum4Float32s(n int, x *float32, lanes *[4]float64)

//go:noescape
func sqDev4Float32s(n int, x *float32, mean float64, lanes *[4]float64)

//go:noescape
func layerNormFloat32s(n int, x, w, b *float32, mean, rstd float64, y *float32)

//go:noescape
func layerNormGradSums(n int, x, w, dy *float32, mean, rstd float64, lanes *[8]float64)

//go:noescape
func layerNormGradFloat32s(n int, x, w, dy *float32, mean, rstd, m1, m2 float64, dx *float32)

//go:noescape
func layerNormGradWFloat32s(n int, x, dy *float32, mean, rstd float64, dw *float32)

// adamFloat32s is Adam's loop over four float64 lanes (adam_amd64.s) for
// float32 weights and gradients, n a multiple of 4; it returns the float32
// sum of w-w over the new weights (0, or NaN if one is not finite).
//
//go:noescape
func adamFloat32s(n int, w, grad *float32, m, v *float64, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32

// adamFloat32Moments is adamFloat32s with float32 moments, widened when
// read and rounded once when stored.
//
//go:noescape
func adamFloat32Moments(n int, w, grad, m, v *float32, b1, c1, b2, c2, eps, bias2Sqrt, stepSize, shrink float64) float32

// siluMulFloat32s and siluMulGradFloat32s are SiLUMul and SiLUMulGrad's
// loops over eight lanes, n a multiple of 8.

//go:noescape
func siluMulFloat32s(n int, x, u, y *float32)

//go:noescape
func siluMulGradFloat32s(n int, x, u, dy, dg *float32)
