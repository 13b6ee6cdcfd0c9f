package train

import (
	"math"
	"runtime"
	"sync"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// Adam is the Adam optimizer with torch.optim.Adam's update (bias-corrected
// moments, eps added outside the square root) and, when WeightDecay > 0,
// torch.optim.AdamW's decoupled weight decay. Its whole state (M, V, Step) is
// exported so that a run can be saved and resumed exactly.
//
// The moments are float64 for every model dtype and the update is computed in
// float64, then rounded once into the parameter's own dtype: the same step on a
// float32 and a float64 model differs only by that final rounding.
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
	Step  int         // number of updates applied so far
	M, V  [][]float64 // first and second moments, one slice per parameter

	grads [][]float64 // float64 copies of float32 gradients, reused every step
	bad   []bool      // per worker and parameter: the update made it non-finite
}

// NewAdam returns an optimizer with zero moments for params.
func NewAdam(params []model.Param, beta1, beta2, eps, weightDecay float64) *Adam {
	a := &Adam{Beta1: beta1, Beta2: beta2, Eps: eps, WeightDecay: weightDecay}
	for _, p := range params {
		n := p.Value.Shape().TotalSize()
		a.M = append(a.M, make([]float64, n))
		a.V = append(a.V, make([]float64, n))
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
	if len(a.grads) != len(grads) {
		a.grads = make([][]float64, len(grads))
	}
	gs := a.grads
	for i, g := range grads {
		values, err := float64sInto(gs[i], g)
		if err != nil {
			return errors.Wrapf(err, "gradient of %s", params[i].Name)
		}
		if len(values) != len(a.M[i]) {
			return errors.Errorf("adam: gradient of %s has %d values, want %d", params[i].Name, len(values), len(a.M[i]))
		}
		for _, v := range values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return errors.Errorf("non-finite gradient (%v) in %s", v, params[i].Name)
			}
		}
		gs[i] = values
	}
	a.Step++
	bias1 := 1 - math.Pow(a.Beta1, float64(a.Step))
	bias2Sqrt := math.Sqrt(1 - math.Pow(a.Beta2, float64(a.Step)))
	stepSize := lr / bias1
	for _, p := range params {
		if _, ok := p.Value.Data().([]float32); !ok {
			if _, ok := p.Value.Data().([]float64); !ok {
				return errors.Errorf("adam: parameter %s has dtype %v", p.Name, p.Value.Dtype())
			}
		}
	}
	// The update is element-wise, so each worker takes its own slice of every
	// parameter and the result does not depend on the split.
	total := 0
	for _, m := range a.M {
		total += len(m)
	}
	workers := 1
	if total >= adamParallelMin {
		workers = runtime.GOMAXPROCS(0)
	}
	if len(a.bad) != workers*len(params) {
		a.bad = make([]bool, workers*len(params))
	}
	clear(a.bad)
	work := func(w int) {
		for i, p := range params {
			n := len(a.M[i])
			lo, hi := n*w/workers, n*(w+1)/workers
			shrink := 1.0
			if a.Decay[i] {
				shrink = 1 - lr*a.WeightDecay
			}
			a.bad[w*len(params)+i] = !a.updateRange(p.Value.Data(), i, gs[i], lo, hi, shrink, stepSize, bias2Sqrt)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(w)
		}()
	}
	work(0)
	wg.Wait()
	for i, p := range params {
		for w := range workers {
			if a.bad[w*len(params)+i] {
				return errors.Errorf("the update made %s non-finite (lr %g)", p.Name, lr)
			}
		}
	}
	return nil
}

// adamParallelMin is the parameter count from which Update spreads its loop
// over the cores (configs/sort.yaml has ~100k, the benchmark's L4 ~800k: a
// few hundred microseconds to milliseconds of square roots and divisions).
const adamParallelMin = 1 << 16

// updateRange applies the step to elements [lo, hi) of parameter i (data is
// its []float32 or []float64) and reports whether they all stayed finite.
func (a *Adam) updateRange(data any, i int, g []float64, lo, hi int, shrink, stepSize, bias2Sqrt float64) bool {
	m, v := a.M[i], a.V[i]
	update := func(j int, w float64) float64 {
		m[j] = a.Beta1*m[j] + (1-a.Beta1)*g[j]
		v[j] = a.Beta2*v[j] + (1-a.Beta2)*g[j]*g[j]
		return w*shrink - stepSize*m[j]/(math.Sqrt(v[j])/bias2Sqrt+a.Eps)
	}
	finite := true
	switch data := data.(type) {
	case []float32:
		for j := lo; j < hi; j++ {
			data[j] = float32(update(j, float64(data[j])))
			finite = finite && !math.IsInf(float64(data[j]), 0) && data[j] == data[j]
		}
	case []float64:
		for j := lo; j < hi; j++ {
			data[j] = update(j, data[j])
			finite = finite && !math.IsInf(data[j], 0) && data[j] == data[j]
		}
	}
	return finite
}

// ClipGlobalNorm returns the L2 norm of all gradients taken together and,
// when maxNorm > 0 and the norm exceeds it, scales every gradient in place by
// maxNorm/norm so that their joint norm becomes maxNorm (PyTorch's
// clip_grad_norm_ without its 1e-6 guard). A non-finite norm is returned
// without scaling anything; the caller decides to stop.
func ClipGlobalNorm(grads []*tensor.Dense, maxNorm float64) (float64, error) {
	sum := 0.0
	for _, g := range grads {
		switch data := g.Data().(type) {
		case []float32:
			for _, v := range data {
				sum += float64(v) * float64(v)
			}
		case []float64:
			for _, v := range data {
				sum += v * v
			}
		default:
			return 0, errors.Errorf("tensor of dtype %v: want float32 or float64", g.Dtype())
		}
	}
	norm := math.Sqrt(sum)
	if maxNorm <= 0 || !(norm > maxNorm) || math.IsInf(norm, 0) {
		return norm, nil
	}
	scale := maxNorm / norm
	for _, g := range grads {
		switch data := g.Data().(type) {
		case []float32:
			for j := range data {
				data[j] = float32(float64(data[j]) * scale)
			}
		case []float64:
			for j := range data {
				data[j] *= scale
			}
		}
	}
	return norm, nil
}

// float64s returns a tensor's values as float64 (a copy for float32).
func float64s(t *tensor.Dense) ([]float64, error) { return float64sInto(nil, t) }

// float64sInto returns a tensor's values as float64: a float64 tensor's own
// slice, or for float32 a converted copy in dst, which is grown only when too
// small (so a caller that keeps dst allocates once, not every step).
func float64sInto(dst []float64, t *tensor.Dense) ([]float64, error) {
	switch data := t.Data().(type) {
	case []float64:
		return data, nil
	case []float32:
		if cap(dst) < len(data) {
			dst = make([]float64, len(data))
		}
		dst = dst[:len(data)]
		for i, v := range data {
			dst[i] = float64(v)
		}
		return dst, nil
	default:
		return nil, errors.Errorf("tensor of dtype %v: want float32 or float64", t.Dtype())
	}
}
