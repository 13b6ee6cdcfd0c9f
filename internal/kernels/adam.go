package kernels

import "math"

// Adam's per-element update (train.Adam.Update). Per element it takes a
// square root and two divisions, in float64: scalar Go spent ~92% of the
// optimizer's time in this loop, ~5 ns an element. On the AVX2 and AVX-512
// paths float32 weights with float32 gradients, the dtypes training uses,
// run through assembly (adam_amd64.s) over four float64 lanes, with every
// operation of the Go loop in its order and none fused; VSQRTPD and VDIVPD
// are correctly rounded like SQRTSD and DIVSD, so every path gives the same
// bits, at ~1.3 ns an element. That is the divider's pace: an 8-lane
// AVX-512 form of the loop measured no faster on this project's machines
// (AMD EPYC), so the AVX-512 path runs this one too. Go fuses x*y+z on
// amd64 only when built with GOAMD64=v3 or above; at the default v1 it does
// not, and the assembly equals that. Float32 moments run through a second
// routine that widens and rounds them at load and store, the rest alike.
// Other dtype pairs, and the last len%4 elements, run the Go loop.

// AdamStep holds the scalars of one Adam step, besides the slices.
type AdamStep struct {
	Beta1, Beta2, Eps float64
	// Bias2Sqrt is sqrt(1 - Beta2^t) at step t, StepSize lr / (1 - Beta1^t).
	Bias2Sqrt, StepSize float64
	// Shrink is decoupled weight decay's factor 1 - lr*λ, 1 for none.
	Shrink float64
}

// Adam applies one Adam step to weights w with gradients g and moments m and
// v (all of w's length at least), in float64 whatever the dtypes of w, g and
// the moments:
//
//	m = Beta1*m + (1-Beta1)*g
//	v = Beta2*v + (1-Beta2)*g*g
//	w = w*Shrink - StepSize*m/(sqrt(v)/Bias2Sqrt + Eps)
//
// each moment rounded once to M when stored (the weight's step uses the
// float64 value before that rounding) and the new weight rounded once to W.
// Float32 moments (M float32) halve the optimizer's memory, as PyTorch keeps
// them in the parameter's dtype. It reports whether every new weight is
// finite.
func Adam[W, G, M float](w []W, g []G, m, v []M, s AdamStep) bool {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	var check W
	n := 0
	if w32, ok := any(w).([]float32); ok && useAVX2 && len(w) >= 4 {
		if g32, ok := any(g).([]float32); ok {
			n = len(w) &^ 3
			b1, c1, b2, c2 := s.Beta1, 1-s.Beta1, s.Beta2, 1-s.Beta2
			switch m := any(m).(type) {
			case []float64:
				v := any(v).([]float64)
				check = W(adamFloat32s(n, &w32[0], &g32[0], &m[0], &v[0], b1, c1, b2, c2, s.Eps, s.Bias2Sqrt, s.StepSize, s.Shrink))
			case []float32:
				v := any(v).([]float32)
				check = W(adamFloat32Moments(n, &w32[0], &g32[0], &m[0], &v[0], b1, c1, b2, c2, s.Eps, s.Bias2Sqrt, s.StepSize, s.Shrink))
			}
		}
	}
	return adamGo(w[n:], g[n:], m[n:], v[n:], s, check)
}

// adamGo is Adam's loop in Go, adding x-x of each new weight x to check (0
// for a finite x, NaN for an infinite or NaN one, and a NaN stays in a sum:
// one addition an element instead of tests and branches).
func adamGo[W, G, M float](w []W, g []G, m, v []M, s AdamStep, check W) bool {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	b1, c1, b2, c2 := s.Beta1, 1-s.Beta1, s.Beta2, 1-s.Beta2
	eps, bias2Sqrt, stepSize, shrink := s.Eps, s.Bias2Sqrt, s.StepSize, s.Shrink
	for j, wj := range w {
		gj := float64(g[j])
		mj := b1*float64(m[j]) + c1*gj
		vj := b2*float64(v[j]) + c2*gj*gj
		m[j], v[j] = M(mj), M(vj)
		x := W(float64(wj)*shrink - stepSize*mj/(math.Sqrt(vj)/bias2Sqrt+eps))
		w[j] = x
		check += x - x
	}
	return check == 0
}
