package kernels

import "math"

// LayerNorm's row loops, which are also RMSNorm's (RMSNormStats,
// RMSNormGradRow, and the others with mean 0). Each computes in float64
// (x - mean is formed in float64: rounding the mean to float32 first
// shifted a row of mean 10 and spread 0.01 by 1e-4 of its spread) and sums
// in four lanes: element j goes to lane j%4 while four remain, the rest to
// lane 0, and the lanes are added in order. On the AVX2 and AVX-512 paths
// float32 rows run through assembly (layernorm_amd64.s) that does exactly
// these operations in the same order, four float64 lanes to a register,
// with no fused multiply-adds, so every path gives the same bits. In
// scalar Go one chain of dependent float64 adds and the conversions were
// 10% of a sort training step.

// LayerNormStats returns the mean of row and 1/sqrt(var + eps), var the
// biased variance.
func LayerNormStats[T float](row []T, eps float64) (mean, rstd float64) {
	var lanes [4]float64
	n := len(row) &^ 3
	if lanePart(row) > 0 {
		sum4Float32s(n, firstFloat32(row), &lanes)
	} else {
		for j := 0; j < n; j += 4 {
			r := row[j : j+4 : j+4]
			lanes[0] += float64(r[0])
			lanes[1] += float64(r[1])
			lanes[2] += float64(r[2])
			lanes[3] += float64(r[3])
		}
	}
	for _, v := range row[n:] {
		lanes[0] += float64(v)
	}
	mean = (lanes[0] + lanes[1] + lanes[2] + lanes[3]) / float64(len(row))
	return mean, rstdAbout(row, mean, eps)
}

// RMSNormStats returns 1/sqrt(mean(row^2) + eps), an RMSNorm's scale:
// LayerNormStats' second pass about 0 instead of the mean. The other row
// kernels take it with mean 0 (x - 0 is exact, so an RMSNorm's rows cost
// what a LayerNorm's do, less the mean's pass).
func RMSNormStats[T float](row []T, eps float64) (rstd float64) { return rstdAbout(row, 0, eps) }

// rstdAbout is 1/sqrt(mean((row - center)^2) + eps).
func rstdAbout[T float](row []T, center, eps float64) float64 {
	var lanes [4]float64
	n := len(row) &^ 3
	if lanePart(row) > 0 {
		sqDev4Float32s(n, firstFloat32(row), center, &lanes)
	} else {
		for j := 0; j < n; j += 4 {
			r := row[j : j+4 : j+4]
			d0, d1, d2, d3 := float64(r[0])-center, float64(r[1])-center, float64(r[2])-center, float64(r[3])-center
			lanes[0] += d0 * d0
			lanes[1] += d1 * d1
			lanes[2] += d2 * d2
			lanes[3] += d3 * d3
		}
	}
	for _, v := range row[n:] {
		d := float64(v) - center
		lanes[0] += d * d
	}
	return 1 / math.Sqrt((lanes[0]+lanes[1]+lanes[2]+lanes[3])/float64(len(row))+eps)
}

// LayerNormRow sets y = (x - mean) * rstd * w + b, or without the + b
// when b is nil (a LayerNorm without bias, or an RMSNorm with mean 0).
func LayerNormRow[T float](x, w, b []T, mean, rstd float64, y []T) {
	if n := lanePart(x); n > 0 {
		var bias *float32 // nil: no bias
		if b != nil {
			bias = firstFloat32(b)
		}
		layerNormFloat32s(n, firstFloat32(x), firstFloat32(w), bias, mean, rstd, firstFloat32(y))
	}
	for j := lanePart(x); j < len(x); j++ {
		v := (float64(x[j]) - mean) * rstd * float64(w[j])
		if b != nil {
			v += float64(b[j])
		}
		y[j] = T(v)
	}
}

// LayerNormGradRow sets dx to the gradient of the loss with respect to the
// row x, given dy for its output y: with xhat = (x - mean) * rstd and
// g = dy * w, dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
func LayerNormGradRow[T float](x, w, dy []T, mean, rstd float64, dx []T) {
	normGradRow(x, w, dy, mean, rstd, true, dx)
}

// RMSNormGradRow is LayerNormGradRow for an RMSNorm (y = x * rstd * w):
// with xhat = x * rstd, dx = rstd * (g - xhat * mean(g * xhat)), no mean(g)
// term because nothing was subtracted.
func RMSNormGradRow[T float](x, w, dy []T, rstd float64, dx []T) {
	normGradRow(x, w, dy, 0, rstd, false, dx)
}

// normGradRow is LayerNormGradRow, without the mean(g) term unless
// centered.
func normGradRow[T float](x, w, dy []T, mean, rstd float64, centered bool, dx []T) {
	var lanes [8]float64 // sums of g, then of g * xhat
	n := lanePart(x)
	if n > 0 {
		layerNormGradSums(n, firstFloat32(x), firstFloat32(w), firstFloat32(dy), mean, rstd, &lanes)
	} else {
		n = len(x) &^ 3
		for j := 0; j < n; j++ {
			g := float64(dy[j]) * float64(w[j])
			lanes[j%4] += g
			lanes[4+j%4] += g * (float64(x[j]) - mean) * rstd
		}
	}
	for j := n; j < len(x); j++ {
		g := float64(dy[j]) * float64(w[j])
		lanes[0] += g
		lanes[4] += g * (float64(x[j]) - mean) * rstd
	}
	var m1 float64
	if centered {
		m1 = (lanes[0] + lanes[1] + lanes[2] + lanes[3]) / float64(len(x))
	}
	m2 := (lanes[4] + lanes[5] + lanes[6] + lanes[7]) / float64(len(x))
	n = lanePart(x)
	if n > 0 {
		layerNormGradFloat32s(n, firstFloat32(x), firstFloat32(w), firstFloat32(dy), mean, rstd, m1, m2, firstFloat32(dx))
	}
	for j := n; j < len(x); j++ {
		g := float64(dy[j]) * float64(w[j])
		dx[j] = T(rstd * (g - m1 - (float64(x[j])-mean)*rstd*m2))
	}
}

// LayerNormGradWRow adds one row's share of the weight's gradient,
// dy * xhat, each product rounded to T before it is added to dw (an
// RMSNorm's with mean 0).
func LayerNormGradWRow[T float](x, dy []T, mean, rstd float64, dw []T) {
	n := lanePart(x)
	if n > 0 {
		layerNormGradWFloat32s(n, firstFloat32(x), firstFloat32(dy), mean, rstd, firstFloat32(dw))
	}
	for j := n; j < len(x); j++ {
		dw[j] += T(float64(dy[j]) * (float64(x[j]) - mean) * rstd)
	}
}

// lanePart is how many of x's elements the four-lane assembly loops take:
// a multiple of 4 for float32 rows on the AVX2 and AVX-512 paths, else
// none.
func lanePart[T float](x []T) int {
	if _, ok := any(x).([]float32); !ok || !useAVX2 {
		return 0
	}
	return len(x) &^ 3
}

// firstFloat32 is &x[0] of a float32 slice that lanePart took.
func firstFloat32[T float](x []T) *float32 { return &any(x).([]float32)[0] }
