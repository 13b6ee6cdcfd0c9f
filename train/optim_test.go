package train

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// refAdam is the textbook Adam/AdamW step (Kingma & Ba, Algorithm 1, with
// Loshchilov & Hutter's decoupled decay) on plain float64 slices, written in
// the m̂/v̂ form rather than the folded step size Adam.Update uses.
func refAdam(w, g, m, v []float64, t int, lr, b1, b2, eps, wd float64) {
	for i := range w {
		w[i] -= lr * wd * w[i]
		m[i] = b1*m[i] + (1-b1)*g[i]
		v[i] = b2*v[i] + (1-b2)*g[i]*g[i]
		mHat := m[i] / (1 - math.Pow(b1, float64(t)))
		vHat := v[i] / (1 - math.Pow(b2, float64(t)))
		w[i] -= lr * mHat / (math.Sqrt(vHat) + eps)
	}
}

func denseOf(dtype tensor.Dtype, shape []int, values []float64) *tensor.Dense {
	if dtype == tensor.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), values...)))
	}
	f := make([]float32, len(values))
	for i, v := range values {
		f[i] = float32(v)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}

func valuesOf(t *tensor.Dense) []float64 {
	v, err := float64s(t)
	if err != nil {
		panic(err)
	}
	return append([]float64(nil), v...)
}

func randomValues(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64() * scale
	}
	return out
}

// TestAdamMatchesReference runs five steps on a matrix (decayed) and a bias
// (not decayed) with changing learning rates and gradients whose scales span
// 1e-4..1 (so eps matters), against refAdam. Tolerance: 1e-13 relative for
// float64 (only summation order differs); for float32 the reference is fed
// the same float32-rounded weights each step and must agree within 2 ulp of
// float32 (the update is computed in float64 and rounded once). The large
// case (76,805 values, above the parallel threshold ParallelMinWork/adamCost)
// is cut by kernels.ParallelFor into chunks over both tensors.
func TestAdamMatchesReference(t *testing.T) {
	for _, c := range []struct {
		dtype tensor.Dtype
		rows  int
		cols  int
	}{{tensor.Float64, 3, 5}, {tensor.Float32, 3, 5}, {tensor.Float64, 300, 256}, {tensor.Float32, 300, 256}} {
		dtype := c.dtype
		t.Run(fmt.Sprintf("%v_%dx%d", dtype, c.rows, c.cols), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			shapes := [][]int{{c.rows, c.cols}, {c.cols}}
			params := []model.Param{
				{Name: "w", Value: denseOf(dtype, shapes[0], randomValues(rng, c.rows*c.cols, 1))},
				{Name: "b", Value: denseOf(dtype, shapes[1], randomValues(rng, c.cols, 1))},
			}
			const b1, b2, eps, wd = 0.9, 0.95, 1e-8, 0.1
			adam := NewAdam(params, tensor.Float64, b1, b2, eps, wd)
			if !adam.Decay[0] || adam.Decay[1] {
				t.Fatalf("Decay = %v, want [true false] (matrix decayed, bias not)", adam.Decay)
			}
			m := [][]float64{make([]float64, c.rows*c.cols), make([]float64, c.cols)}
			v := [][]float64{make([]float64, c.rows*c.cols), make([]float64, c.cols)}
			for step, lr := range []float64{1e-3, 1e-2, 3e-2, 1e-2, 5e-3} {
				grads := make([]*tensor.Dense, 2)
				refW := make([][]float64, 2)
				for i, shape := range shapes {
					scale := math.Pow(10, -float64(rng.IntN(5)))
					g := randomValues(rng, len(m[i]), scale)
					grads[i] = denseOf(dtype, shape, g)
					refW[i] = valuesOf(params[i].Value)
					decay := []float64{wd, 0}[i]
					refAdam(refW[i], valuesOf(grads[i]), m[i], v[i], step+1, lr, b1, b2, eps, decay)
				}
				if err := adam.Update(params, grads, lr); err != nil {
					t.Fatal(err)
				}
				for i := range params {
					got := valuesOf(params[i].Value)
					for j := range got {
						tol := 1e-13 * math.Max(1, math.Abs(refW[i][j]))
						if dtype == tensor.Float32 {
							tol = 2 * float64(math.Nextafter32(float32(math.Abs(refW[i][j])), float32(math.Inf(1)))-float32(math.Abs(refW[i][j])))
						}
						if math.Abs(got[j]-refW[i][j]) > tol {
							t.Fatalf("step %d %s[%d] = %.17g, reference %.17g (tol %g)", step+1, params[i].Name, j, got[j], refW[i][j], tol)
						}
					}
				}
			}
			if adam.Step != 5 {
				t.Errorf("Step = %d after 5 updates", adam.Step)
			}
		})
	}
}

// TestAdamWMatchesPyTorch replays testdata/adamw_torch.json (torch 1.13
// AdamW, float64, the bias in a param group without decay) and requires
// agreement within 1e-12 absolute on weights of order 1.
func TestAdamWMatchesPyTorch(t *testing.T) {
	raw, err := os.ReadFile("testdata/adamw_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Beta1, Beta2, Eps float64
		WeightDecay       float64 `json:"weight_decay"`
		Init              struct{ W, B []float64 }
		Steps             []struct {
			LR   float64
			GW   []float64 `json:"grad_w"`
			GB   []float64 `json:"grad_b"`
			W, B []float64
		}
	}
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	params := []model.Param{
		{Name: "w", Value: denseOf(tensor.Float64, []int{3, 4}, fx.Init.W)},
		{Name: "b", Value: denseOf(tensor.Float64, []int{4}, fx.Init.B)},
	}
	adam := NewAdam(params, tensor.Float64, fx.Beta1, fx.Beta2, fx.Eps, fx.WeightDecay)
	for s, st := range fx.Steps {
		grads := []*tensor.Dense{denseOf(tensor.Float64, []int{3, 4}, st.GW), denseOf(tensor.Float64, []int{4}, st.GB)}
		if err := adam.Update(params, grads, st.LR); err != nil {
			t.Fatal(err)
		}
		for i, want := range [][]float64{st.W, st.B} {
			got := valuesOf(params[i].Value)
			for j := range want {
				if math.Abs(got[j]-want[j]) > 1e-12 {
					t.Fatalf("step %d %s[%d] = %.17g, torch %.17g", s+1, params[i].Name, j, got[j], want[j])
				}
			}
		}
	}
}

func TestAdamRefusesNonFinite(t *testing.T) {
	params := []model.Param{{Name: "w", Value: denseOf(tensor.Float32, []int{2, 2}, []float64{1, 2, 3, 4})}}
	adam := NewAdam(params, tensor.Float32, 0.9, 0.999, 1e-8, 0)
	grad := denseOf(tensor.Float32, []int{2, 2}, []float64{0, math.NaN(), 0, 0})
	if err := adam.Update(params, []*tensor.Dense{grad}, 1e-3); err == nil {
		t.Fatal("NaN gradient accepted")
	}
	if got := valuesOf(params[0].Value); got[1] != 2 || adam.Step != 0 || adam.M[0].Float32s()[0] != 0 {
		t.Fatalf("refused update changed state: weights %v, step %d", got, adam.Step)
	}
	grad = denseOf(tensor.Float32, []int{2, 2}, []float64{1, 1, 1, 1})
	if err := adam.Update(params, []*tensor.Dense{grad}, 1e39); err == nil {
		t.Fatal("update to float32 overflow accepted")
	}
}

// TestAdamBitwise pins Update to the per-element formula, evaluated in
// float64 and rounded once to the parameter's and the moments' dtypes, bit
// for bit on the weights and both moments: four steps with changing
// learning rates, for float32 and float64 weights, gradients and moments
// (and the mixed triples), on
// parameter lists of 20, 2,631 and 85,442 values. GOMAXPROCS is 3 meanwhile,
// so that the largest list, above the parallel threshold, is cut into chunks
// that end inside tensors and the first chunk stays on the test's goroutine.
func TestAdamBitwise(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if total := 85442; float64(total)*adamCost < kernels.ParallelMinWork {
		t.Fatalf("%d values no longer cross the parallel threshold", total)
	}
	sizes := [][][]int{
		{{3, 5}, {5}},
		{{40, 64}, {64}, {7}},
		{{300, 256}, {256}, {129, 65}, {1}},
	}
	dtypes := []tensor.Dtype{tensor.Float32, tensor.Float64}
	for _, shapes := range sizes {
		for _, wType := range dtypes {
			for _, gType := range dtypes {
				for _, mType := range dtypes {
					total := 0
					for _, shape := range shapes {
						total += tensor.Shape(shape).TotalSize()
					}
					t.Run(fmt.Sprintf("%d_w%v_g%v_m%v", total, wType, gType, mType), func(t *testing.T) {
						adamBitwise(t, shapes, wType, gType, mType)
					})
				}
			}
		}
	}
}

func adamBitwise(t *testing.T, shapes [][]int, wType, gType, mType tensor.Dtype) {
	rng := rand.New(rand.NewPCG(3, 4))
	// Variables, not constants: 1-b1 of constants would be exact, not the
	// float64 subtraction Update does.
	b1, b2, eps, wd := 0.9, 0.95, 1e-8, 0.1
	params := make([]model.Param, len(shapes))
	// The reference's state: weights (holding values of wType), moments.
	w, m, v := make([][]float64, len(shapes)), make([][]float64, len(shapes)), make([][]float64, len(shapes))
	for i, shape := range shapes {
		params[i] = model.Param{Name: fmt.Sprint("p", i), Value: denseOf(wType, shape, randomValues(rng, tensor.Shape(shape).TotalSize(), 1))}
		w[i] = valuesOf(params[i].Value)
		m[i] = make([]float64, len(w[i]))
		v[i] = make([]float64, len(w[i]))
	}
	adam := NewAdam(params, mType, b1, b2, eps, wd)
	for step, lr := range []float64{1e-3, 3e-2, 1e-2, 5e-3} {
		grads := make([]*tensor.Dense, len(shapes))
		for i, shape := range shapes {
			g := randomValues(rng, len(w[i]), math.Pow(10, -float64(rng.IntN(5))))
			for j := range g {
				if rng.IntN(10) == 0 {
					g[j] = 0
				}
			}
			grads[i] = denseOf(gType, shape, g)
		}
		if err := adam.Update(params, grads, lr); err != nil {
			t.Fatal(err)
		}
		n := float64(step + 1)
		bias1 := 1 - math.Pow(b1, n)
		bias2Sqrt := math.Sqrt(1 - math.Pow(b2, n))
		stepSize := lr / bias1
		for i, shape := range shapes {
			shrink := 1.0
			if len(shape) >= 2 {
				shrink = 1 - lr*wd
			}
			g := valuesOf(grads[i])
			for j := range w[i] {
				mj := b1*m[i][j] + (1-b1)*g[j]
				vj := b2*v[i][j] + (1-b2)*g[j]*g[j]
				w[i][j] = w[i][j]*shrink - stepSize*mj/(math.Sqrt(vj)/bias2Sqrt+eps)
				m[i][j], v[i][j] = mj, vj
				if wType == tensor.Float32 {
					w[i][j] = float64(float32(w[i][j]))
				}
				if mType == tensor.Float32 {
					m[i][j], v[i][j] = float64(float32(mj)), float64(float32(vj))
				}
			}
			got, gotM, gotV := valuesOf(params[i].Value), valuesOf(adam.M[i]), valuesOf(adam.V[i])
			for j := range w[i] {
				for _, c := range []struct {
					what      string
					got, want float64
				}{{"w", got[j], w[i][j]}, {"m", gotM[j], m[i][j]}, {"v", gotV[j], v[i][j]}} {
					if math.Float64bits(c.got) != math.Float64bits(c.want) {
						t.Fatalf("step %d: %s of %s[%d] = %.17g, reference %.17g", step+1, c.what, params[i].Name, j, c.got, c.want)
					}
				}
			}
		}
	}
}

// TestAdamRefusesNonFiniteParallel: above the parallel threshold, a
// non-finite gradient is refused naming the first parameter that has one,
// leaving every weight and moment bit for bit as it was; and a weight made
// non-finite by the update (here an infinite one, in the last chunk) is
// reported by name.
func TestAdamRefusesNonFiniteParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := [][]int{{300, 256}, {256}, {40000}}
	params := make([]model.Param, len(shapes))
	grads := make([]*tensor.Dense, len(shapes))
	for i, shape := range shapes {
		n := tensor.Shape(shape).TotalSize()
		params[i] = model.Param{Name: fmt.Sprint("p", i), Value: denseOf(tensor.Float32, shape, randomValues(rng, n, 1))}
		grads[i] = denseOf(tensor.Float32, shape, randomValues(rng, n, 1))
	}
	adam := NewAdam(params, tensor.Float64, 0.9, 0.999, 1e-8, 0.1)
	if err := adam.Update(params, grads, 1e-3); err != nil {
		t.Fatal(err)
	}
	before := make([][]float64, len(params))
	moments := make([][]float64, 2*len(params))
	for i := range params {
		before[i] = valuesOf(params[i].Value)
		moments[2*i] = valuesOf(adam.M[i])
		moments[2*i+1] = valuesOf(adam.V[i])
	}
	grads[2].Float32s()[39999] = float32(math.NaN())
	grads[1].Float32s()[255] = float32(math.Inf(-1))
	err := adam.Update(params, grads, 1e-3)
	if err == nil || err.Error() != "non-finite gradient (-Inf) in p1" {
		t.Fatalf("error %v, want the -Inf gradient of p1", err)
	}
	for i := range params {
		after, m, v := valuesOf(params[i].Value), valuesOf(adam.M[i]), valuesOf(adam.V[i])
		for j := range after {
			if math.Float64bits(after[j]) != math.Float64bits(before[i][j]) ||
				math.Float64bits(m[j]) != math.Float64bits(moments[2*i][j]) ||
				math.Float64bits(v[j]) != math.Float64bits(moments[2*i+1][j]) {
				t.Fatalf("refused update changed %s[%d]", params[i].Name, j)
			}
		}
	}
	if adam.Step != 1 {
		t.Fatalf("refused update counted: Step %d", adam.Step)
	}
	grads[1].Float32s()[255], grads[2].Float32s()[39999] = 0, 0
	params[2].Value.Float32s()[39990] = float32(math.Inf(1))
	if err := adam.Update(params, grads, 1e-3); err == nil || err.Error() != "the update made p2 non-finite (lr 0.001)" {
		t.Fatalf("error %v, want p2 made non-finite", err)
	}
}

// TestClipGlobalNormDeterministic: the norm of 600k values, enough to be
// summed on several cores, is the same to the bit for GOMAXPROCS 1, 2, 3
// and 5, within 1e-12 of a plain sum, and the clipped gradients are the
// same to the bit too.
func TestClipGlobalNormDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	shapes := [][]int{{512, 1000}, {1000}, {333, 259}, {7}, {1}}
	rng := rand.New(rand.NewPCG(7, 8))
	values := make([][]float64, len(shapes))
	plain := 0.0
	for i, shape := range shapes {
		values[i] = randomValues(rng, tensor.Shape(shape).TotalSize(), 1e-2)
		for _, x := range values[i] {
			x = float64(float32(x))
			plain += x * x
		}
	}
	var norm0 float64
	var clipped0 [][]float64
	for _, procs := range []int{1, 2, 3, 5} {
		runtime.GOMAXPROCS(procs)
		grads := make([]*tensor.Dense, len(shapes))
		for i, shape := range shapes {
			grads[i] = denseOf(tensor.Float32, shape, values[i])
		}
		norm, err := ClipGlobalNorm(grads, 1)
		if err != nil {
			t.Fatal(err)
		}
		if procs == 1 {
			norm0 = norm
			if math.Abs(norm-math.Sqrt(plain)) > 1e-12*norm {
				t.Fatalf("norm %.17g, plain sum's %.17g", norm, math.Sqrt(plain))
			}
			if !(norm > 1) {
				t.Fatalf("norm %g: the test needs a norm above the limit", norm)
			}
		} else if math.Float64bits(norm) != math.Float64bits(norm0) {
			t.Fatalf("GOMAXPROCS %d: norm %.17g, with 1 core %.17g", procs, norm, norm0)
		}
		for i, g := range grads {
			got := valuesOf(g)
			if procs == 1 {
				clipped0 = append(clipped0, got)
				continue
			}
			for j := range got {
				if math.Float64bits(got[j]) != math.Float64bits(clipped0[i][j]) {
					t.Fatalf("GOMAXPROCS %d: clipped gradient %d[%d] = %g, with 1 core %g", procs, i, j, got[j], clipped0[i][j])
				}
			}
		}
	}
}

// TestClipGlobalNorm: a norm above the limit is scaled to exactly the limit
// (within float rounding), directions are kept; below the limit or with the
// limit 0, nothing changes.
func TestClipGlobalNorm(t *testing.T) {
	for _, dtype := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		a := denseOf(dtype, []int{2, 2}, []float64{3, 0, 0, 4})
		b := denseOf(dtype, []int{3}, []float64{0, 12, 0})
		// Joint norm sqrt(9+16+144) = 13.
		norm, err := ClipGlobalNorm([]*tensor.Dense{a, b}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if norm != 13 {
			t.Errorf("%v: norm %v, want 13", dtype, norm)
		}
		after, _ := ClipGlobalNorm([]*tensor.Dense{a, b}, 0)
		tol := 1e-15
		if dtype == tensor.Float32 {
			tol = 1e-7
		}
		if math.Abs(after-1) > tol {
			t.Errorf("%v: norm after clipping %v, want 1", dtype, after)
		}
		if got := valuesOf(b)[1]; math.Abs(got-12.0/13) > tol {
			t.Errorf("%v: b[1] = %v, want 12/13", dtype, got)
		}
		before := valuesOf(a)
		again, _ := ClipGlobalNorm([]*tensor.Dense{a, b}, 5)
		if again != after || valuesOf(a)[3] != before[3] {
			t.Errorf("%v: clipping below the limit changed the gradients", dtype)
		}
	}
	nan := denseOf(tensor.Float64, []int{2}, []float64{math.Inf(1), 1})
	if norm, _ := ClipGlobalNorm([]*tensor.Dense{nan}, 1); !math.IsInf(norm, 1) || valuesOf(nan)[1] != 1 {
		t.Errorf("infinite gradient: norm %v, values %v", norm, valuesOf(nan))
	}
}

// float64s returns a tensor's values as float64 (a copy for float32).
func float64s(t *tensor.Dense) ([]float64, error) {
	switch t.Dtype() {
	case tensor.Float64:
		return t.Float64s(), nil
	case tensor.Float32:
		out := make([]float64, len(t.Float32s()))
		for i, v := range t.Float32s() {
			out[i] = float64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("tensor of dtype %v: want float32 or float64", t.Dtype())
}
