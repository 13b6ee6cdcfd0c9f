package train

import (
	"math"
	"sync/atomic"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// Adam is the Adam optimizer with torch.optim.Adam's update (bias-corrected
// moments, eps added outside the square root) and, when WeightDecay > 0,
// torch.optim.AdamW's decoupled weight decay. Its whole state (M, V, Step) is
// exported so that a run can be saved and resumed exactly.
//
// The moments are float64 or float32 (train.moments), and the update is
// computed in float64 whatever the dtypes, each moment and the new weight
// rounded once when stored (kernels.Adam): the same step on a float32 and a
// float64 model differs only by the weight's final rounding.
type Adam struct {
	Beta1, Beta2, Eps float64
	// WeightDecay is the decoupled (AdamW) decay rate λ: p ← p·(1 − lr·λ)
	// before the Adam step, applied only where Decay is true.
	WeightDecay float64
	// Decay marks the parameters weight decay applies to: weight matrices and
	// embeddings (every tensor of rank >= 2). Biases and LayerNorm gains and
	// shifts (rank 1) are left alone, as in nanoGPT and most transformer
	// recipes, because shrinking them toward 0 has no regularising meaning.
	Decay []bool
	Step  int // number of updates applied so far
	// M and V are the first and second moments, one tensor per parameter of
	// its shape, all of one dtype (float32 or float64).
	M, V []*tensor.Dense

	// nonFinite is set by Update's parallel passes when one meets an
	// infinite or NaN gradient (first pass) or new weight (second pass).
	nonFinite atomic.Bool
}

// NewAdam returns an optimizer with zero moments of dtype moments (float32
// or float64) for params.
func NewAdam(params []model.Param, moments tensor.Dtype, beta1, beta2, eps, weightDecay float64) *Adam {
	a := &Adam{Beta1: beta1, Beta2: beta2, Eps: eps, WeightDecay: weightDecay}
	for _, p := range params {
		shape := p.Value.Shape().Clone()
		a.M = append(a.M, tensor.New(tensor.Of(moments), tensor.WithShape(shape...)))
		a.V = append(a.V, tensor.New(tensor.Of(moments), tensor.WithShape(shape...)))
		a.Decay = append(a.Decay, p.Value.Dims() >= 2)
	}
	return a
}

// Update applies one Adam step with learning rate lr, writing the new values
// into each parameter's backing slice (so every graph bound to the model sees
// them). It refuses non-finite gradients and reports an update that would
// leave a non-finite weight; in both cases the error names the parameter. A
// refused gradient leaves the weights and moments untouched; after an
// overflowing update the model must not be saved.
func (a *Adam) Update(params []model.Param, grads []*tensor.Dense, lr float64) error {
	if len(params) != len(a.M) || len(grads) != len(a.M) {
		return errors.Errorf("adam: %d parameters and %d gradients for an optimizer of %d", len(params), len(grads), len(a.M))
	}
	total := 0
	for i, p := range params {
		n, err := valuesLen(grads[i])
		if err != nil {
			return errors.Wrapf(err, "gradient of %s", p.Name)
		}
		want := a.M[i].Shape().TotalSize()
		if n != want {
			return errors.Errorf("adam: gradient of %s has %d values, want %d", p.Name, n, want)
		}
		if n, err = valuesLen(p.Value); err != nil {
			return errors.Errorf("adam: parameter %s has dtype %v", p.Name, p.Value.Dtype())
		} else if n != want {
			return errors.Errorf("adam: parameter %s has %d values, want %d", p.Name, n, want)
		}
		total += n
	}
	// Every gradient must be known finite before the first element is
	// written, so that a refused step leaves the weights and moments as
	// they were: a read-only pass of its own comes first. It finds whether
	// any value is non-finite; the error's details are looked for only then.
	a.nonFinite.Store(false)
	kernels.ParallelFor(total, finiteCost, func(from, to int) {
		forSegments(grads, from, to, func(i, lo, hi int) {
			if !finiteRange(grads[i], lo, hi) {
				a.nonFinite.Store(true)
			}
		})
	})
	if a.nonFinite.Load() {
		for i, g := range grads {
			if x, ok := firstNonFinite(g); ok {
				return errors.Errorf("non-finite gradient (%v) in %s", x, params[i].Name)
			}
		}
	}
	a.Step++
	bias1 := 1 - math.Pow(a.Beta1, float64(a.Step))
	s := kernels.AdamStep{
		Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps,
		Bias2Sqrt: math.Sqrt(1 - math.Pow(a.Beta2, float64(a.Step))),
		StepSize:  lr / bias1,
	}
	decayShrink := 1 - lr*a.WeightDecay
	// The update is element-wise, so ParallelFor may cut the parameters,
	// taken end to end as one range, anywhere: the result is the same.
	a.nonFinite.Store(false)
	kernels.ParallelFor(total, adamCost, func(from, to int) {
		forSegments(grads, from, to, func(i, lo, hi int) {
			s := s
			s.Shrink = 1
			if a.Decay[i] {
				s.Shrink = decayShrink
			}
			if !updateSegment(params[i].Value, grads[i], a.M[i], a.V[i], lo, hi, s) {
				a.nonFinite.Store(true)
			}
		})
	})
	if a.nonFinite.Load() {
		// Each element was written, so the parameters now holding a
		// non-finite value are exactly those the update made non-finite.
		for _, p := range params {
			if _, ok := firstNonFinite(p.Value); ok {
				return errors.Errorf("the update made %s non-finite (lr %g)", p.Name, lr)
			}
		}
	}
	return nil
}

// adamCost is kernels.ParallelFor's work per element of the update, in
// multiply-adds: a dozen flops, a square root and two divisions, each of
// those several multiplies' time. ParallelFor then spreads the update over
// the cores from ~62k parameters (configs/sort.yaml has ~100k, the
// benchmark's L4 ~800k: ~170 us and ~1.3 ms on one core with kernels.Adam's
// AVX2 loop, ~560 us and ~4.5 ms in Go).
const adamCost = 16

// finiteCost is ParallelFor's work per element of the finiteness check: a
// subtraction and an addition.
const finiteCost = 2

// updateSegment applies the step s to elements [lo, hi) of a parameter w
// whose gradient is g and moments m and v (each float32 or float64), and
// reports whether they all stayed finite. kernels.Adam is the per-element
// update, in float64 for every dtype, the moments and the new weight
// rounded once to their own; for float32 weights and gradients (training's)
// it runs in AVX2 assembly when the CPU has it, with the same bits as its
// Go loop.
func updateSegment(w, g, m, v *tensor.Dense, lo, hi int, s kernels.AdamStep) bool {
	if m.Dtype() == tensor.Float32 {
		return updateWeights(w, g, m.Float32s()[lo:hi], v.Float32s()[lo:hi], lo, hi, s)
	}
	return updateWeights(w, g, m.Float64s()[lo:hi], v.Float64s()[lo:hi], lo, hi, s)
}

// updateWeights is updateSegment once the moments' dtype is known.
func updateWeights[M float](w, g *tensor.Dense, m, v []M, lo, hi int, s kernels.AdamStep) bool {
	if w.Dtype() == tensor.Float32 {
		return updateWith(w.Float32s()[lo:hi], g, m, v, lo, hi, s)
	}
	return updateWith(w.Float64s()[lo:hi], g, m, v, lo, hi, s)
}

// updateWith is updateWeights once the weights' dtype is known.
func updateWith[W, M float](w []W, g *tensor.Dense, m, v []M, lo, hi int, s kernels.AdamStep) bool {
	if g.Dtype() == tensor.Float32 {
		return kernels.Adam(w, g.Float32s()[lo:hi], m, v, s)
	}
	return kernels.Adam(w, g.Float64s()[lo:hi], m, v, s)
}

// ClipGlobalNorm returns the L2 norm of all gradients taken together and,
// when maxNorm > 0 and the norm exceeds it, scales every gradient in place by
// maxNorm/norm so that their joint norm becomes maxNorm (PyTorch's
// clip_grad_norm_ without its 1e-6 guard). A non-finite norm is returned
// without scaling anything; the caller decides to stop.
//
// The sum of squares is in float64. It is cut into normPieces pieces of the
// gradients taken end to end, whatever the number of cores, each summed in
// order into four accumulators, and the pieces' sums are added in order: the
// norm depends on the gradients' values and shapes only, not on the machine.
func ClipGlobalNorm(grads []*tensor.Dense, maxNorm float64) (float64, error) {
	total := 0
	for _, g := range grads {
		n, err := valuesLen(g)
		if err != nil {
			return 0, err
		}
		total += n
	}
	var sums [normPieces]float64
	kernels.ParallelFor(normPieces, normCost*float64(total)/normPieces, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			sums[p] = sumSquares(grads, p*total/normPieces, (p+1)*total/normPieces)
		}
	})
	sum := 0.0
	for _, s := range sums {
		sum += s
	}
	norm := math.Sqrt(sum)
	if maxNorm <= 0 || !(norm > maxNorm) || math.IsInf(norm, 0) {
		return norm, nil
	}
	scale := maxNorm / norm
	kernels.ParallelFor(total, normCost, func(from, to int) {
		forSegments(grads, from, to, func(i, lo, hi int) {
			if grads[i].Dtype() == tensor.Float32 {
				scaleBy(grads[i].Float32s()[lo:hi], scale)
			} else {
				scaleBy(grads[i].Float64s()[lo:hi], scale)
			}
		})
	})
	return norm, nil
}

// normPieces is the number of pieces ClipGlobalNorm's sum is cut into: a
// fixed number, so that the sum's order does not depend on the machine, and
// enough for ParallelFor to balance the pieces over a few cores.
const normPieces = 32

// normCost is ParallelFor's work per element of the sum of squares and of
// the scaling.
const normCost = 2

// sumSquares is the sum of the squares of elements [from, to) of grads
// taken end to end.
func sumSquares(grads []*tensor.Dense, from, to int) float64 {
	var acc [4]float64
	forSegments(grads, from, to, func(i, lo, hi int) {
		if grads[i].Dtype() == tensor.Float32 {
			addSquares(&acc, grads[i].Float32s()[lo:hi])
		} else {
			addSquares(&acc, grads[i].Float64s()[lo:hi])
		}
	})
	return (acc[0] + acc[1]) + (acc[2] + acc[3])
}

// addSquares adds x[j]² to acc[j%4]. Four chains of additions, independent
// of one another, run about three times as fast as a single one, whose every
// addition waits for the previous one's result.
func addSquares[T float](acc *[4]float64, x []T) {
	s0, s1, s2, s3 := acc[0], acc[1], acc[2], acc[3]
	for ; len(x) >= 4; x = x[4:] {
		a, b, c, d := float64(x[0]), float64(x[1]), float64(x[2]), float64(x[3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	acc[0], acc[1], acc[2], acc[3] = s0, s1, s2, s3
	for j, v := range x {
		acc[j] += float64(v) * float64(v)
	}
}

// scaleBy multiplies x by scale in float64, rounding once to T.
func scaleBy[T float](x []T, scale float64) {
	for j, v := range x {
		x[j] = T(float64(v) * scale)
	}
}

// float is the element type of the tensors Adam and ClipGlobalNorm handle.
type float interface{ float32 | float64 }

// valuesLen is the number of values of a float32 or float64 tensor.
func valuesLen(t *tensor.Dense) (int, error) {
	switch t.Dtype() {
	case tensor.Float32:
		return len(t.Float32s()), nil
	case tensor.Float64:
		return len(t.Float64s()), nil
	}
	return 0, errors.Errorf("tensor of dtype %v: want float32 or float64", t.Dtype())
}

// forSegments calls f(i, lo, hi) for each tensor i of ts (float32 or float64)
// that has elements in the range [from, to) of all of them taken end to end,
// [lo, hi) being those elements' indices in ts[i]. Cutting all the tensors
// as one range gives ParallelFor even chunks however unequal the tensors.
func forSegments(ts []*tensor.Dense, from, to int, f func(i, lo, hi int)) {
	start := 0
	for i, t := range ts {
		if start >= to {
			return
		}
		n, _ := valuesLen(t)
		if lo, hi := max(from-start, 0), min(to-start, n); lo < hi {
			f(i, lo, hi)
		}
		start += n
	}
}

// finiteRange reports whether elements [lo, hi) of t are all finite.
func finiteRange(t *tensor.Dense, lo, hi int) bool {
	if t.Dtype() == tensor.Float32 {
		return allFinite(t.Float32s()[lo:hi])
	}
	return allFinite(t.Float64s()[lo:hi])
}

// allFinite sums x-x (0, or NaN for an infinite or NaN x) in four chains,
// so that the additions do not wait on one another.
func allFinite[T float](x []T) bool {
	var s0, s1, s2, s3 T
	for ; len(x) >= 4; x = x[4:] {
		s0 += x[0] - x[0]
		s1 += x[1] - x[1]
		s2 += x[2] - x[2]
		s3 += x[3] - x[3]
	}
	for _, v := range x {
		s0 += v - v
	}
	return s0+s1+s2+s3 == 0
}

// firstNonFinite returns the first infinite or NaN value of t, if any.
func firstNonFinite(t *tensor.Dense) (float64, bool) {
	if t.Dtype() == tensor.Float32 {
		for _, v := range t.Float32s() {
			if v-v != 0 {
				return float64(v), true
			}
		}
		return 0, false
	}
	for _, v := range t.Float64s() {
		if v-v != 0 {
			return v, true
		}
	}
	return 0, false
}
