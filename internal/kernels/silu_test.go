package kernels

import (
	"math"
	"testing"
)

// siluInputs are g on a fine grid over [-20, 20] (past it s is 0 or 1 to
// float32 precision) plus the tails, signed zeros and a NaN, and u (also
// used as dy) near 1 with both signs: a length no multiple of 8 or of
// expBlock, so vector part, blocks and tail all run.
func siluInputs() (g, u []float32) {
	for v := -20.0; v <= 20; v += 1.0 / 256 {
		g = append(g, float32(v))
	}
	g = append(g, -1e4, -100, -88.5, 88.5, 100, 1e4, 0, float32(math.Copysign(0, -1)), 1e-20, -1e-20, float32(math.NaN()))
	g = append(g, g[:29]...)
	for i := range g {
		u = append(u, float32(math.Copysign(1+0.25*math.Sin(float64(i)), math.Cos(float64(i)))))
	}
	return g, u
}

// TestSiLUMulMatchesFloat64: SiLUMul and SiLUMulGrad on every path against
// g u / (1 + exp(-g)) and dy u (s + g s (1 - s)) in float64. Tolerance, for
// both: 1e-7 of max(1, |g|) |u| (|u dy| for the gradient) absolute, a
// float32 rounding of the terms, plus 5e-7 relative; a NaN gives NaN.
func TestSiLUMulMatchesFloat64(t *testing.T) { forEachPath(t, testSiLUMulMatchesFloat64) }

func testSiLUMulMatchesFloat64(t *testing.T) {
	g, u := siluInputs()
	y, dg := make([]float32, len(g)), make([]float32, len(g))
	SiLUMul(g, u, y)
	SiLUMulGrad(g, u, u, dg)
	worst := map[string]float64{}
	for i, v := range g {
		x, w := float64(v), float64(u[i])
		s := 1 / (1 + math.Exp(-x))
		for _, c := range []struct {
			name      string
			got, want float64
			scale     float64
		}{
			{"SiLUMul", float64(y[i]), x * s * w, math.Abs(w)},
			{"SiLUMulGrad", float64(dg[i]), w * w * (s + x*s*(1-s)), w * w},
		} {
			if math.IsNaN(x) {
				if !math.IsNaN(c.got) {
					t.Errorf("%s(NaN) = %v, want NaN", c.name, c.got)
				}
				continue
			}
			tol := 1e-7*max(1, math.Abs(x))*c.scale + 5e-7*math.Abs(c.want)
			if e := math.Abs(c.got-c.want) / tol; !(e <= 1) {
				t.Errorf("%s at g %v, u %v: %v, float64 %v (%.2g x the tolerance)", c.name, v, u[i], c.got, c.want, e)
			} else {
				worst[c.name] = max(worst[c.name], e)
			}
		}
	}
	t.Logf("worst error, in tolerances: %v", worst)
}

// TestSiLUMulSameBitsInVectorAndTail: on every path, every element of
// SiLUMul and SiLUMulGrad over the whole input has the bits it has when
// computed alone (one element: the Go loop's tail), so the assembly lanes
// do the Go loop's operations.
func TestSiLUMulSameBitsInVectorAndTail(t *testing.T) { forEachPath(t, testSiLUMulSameBits) }

func testSiLUMulSameBits(t *testing.T) {
	g, u := siluInputs()
	dy := make([]float32, len(g))
	for i := range dy {
		dy[i] = u[len(u)-1-i]
	}
	y, dg := make([]float32, len(g)), make([]float32, len(g))
	SiLUMul(g, u, y)
	SiLUMulGrad(g, u, dy, dg)
	one, oneGrad := make([]float32, 1), make([]float32, 1)
	for i := range g {
		SiLUMul(g[i:i+1], u[i:i+1], one)
		SiLUMulGrad(g[i:i+1], u[i:i+1], dy[i:i+1], oneGrad)
		if math.Float32bits(one[0]) != math.Float32bits(y[i]) || math.Float32bits(oneGrad[0]) != math.Float32bits(dg[i]) {
			t.Fatalf("g %v at %d: SiLUMul %v, alone %v; SiLUMulGrad %v, alone %v", g[i], i, y[i], one[0], dg[i], oneGrad[0])
		}
	}
}
