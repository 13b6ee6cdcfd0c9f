package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// softmaxOf builds and runs MaskedSoftmax on scores (B, H, T, T) and an
// optional key mask (B, T) of the same dtype.
func softmaxOf(t *testing.T, scores, keyMask *tensor.Dense, causal bool, scale float64) []float64 {
	t.Helper()
	g := gorgonia.NewGraph()
	var km *gorgonia.Node
	if keyMask != nil {
		km = graphtest.Param(g, "key_mask", keyMask)
	}
	y, err := MaskedSoftmax(graphtest.Param(g, "scores", scores), km, Mask{Causal: causal}, scale)
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Run(t, g)
	return graphtest.Values(t, y)
}

// TestMaskedSoftmaxRows checks, for float64 and float32, on logits of
// standard deviation 1 and 1000: every entry finite, every row with a
// visible key sums to 1 (|sum - 1| <= 1e-12 for float64, 1e-6 for float32),
// hidden entries (above the diagonal, padded keys) exactly 0, fully hidden
// rows all 0, and visible entries equal to a float64 reference softmax
// (abs 1e-12 / 1e-6).
func TestMaskedSoftmaxRows(t *testing.T) {
	const b, h, tt = 2, 3, 5
	keyMask := []float64{1, 1, 1, 1, 1, 0, 1, 1, 0, 1} // batch 1 hides keys 0 and 3
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-6
		}
		for _, std := range []float64{1, 1e3} {
			for _, causal := range []bool{true, false} {
				for _, masked := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/std=%g/causal=%t/keymask=%t", dt, std, causal, masked), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(11, uint64(std)))
						scores := graphtest.RandDense(rng, std, b, h, tt, tt)
						var km *tensor.Dense
						if masked {
							km = tensor.New(tensor.WithShape(b, tt), tensor.WithBacking(append([]float64(nil), keyMask...)))
						}
						if dt == tensor.Float32 {
							scores = graphtest.ToF32(scores)
							if km != nil {
								km = graphtest.ToF32(km)
							}
						}
						s := float64s(scores)
						y := softmaxOf(t, scores, km, causal, 0.5)
						for row := 0; row < b*h*tt; row++ {
							bi, i := row/(h*tt), row%tt
							visible := func(j int) bool {
								return (!causal || j <= i) && (!masked || keyMask[bi*tt+j] != 0)
							}
							maxv, sum, refSum := math.Inf(-1), 0.0, 0.0
							for j := 0; j < tt; j++ {
								if visible(j) {
									maxv = math.Max(maxv, 0.5*s[row*tt+j])
								}
							}
							for j := 0; j < tt; j++ {
								v := y[row*tt+j]
								if math.IsNaN(v) || math.IsInf(v, 0) {
									t.Fatalf("row %d: entry %d is %v", row, j, v)
								}
								if !visible(j) {
									if v != 0 {
										t.Fatalf("row %d: hidden entry %d is %v, want exactly 0", row, j, v)
									}
									continue
								}
								sum += v
								refSum += math.Exp(0.5*s[row*tt+j] - maxv)
							}
							if math.IsInf(maxv, -1) {
								continue // fully hidden row: all zeros, checked above
							}
							if math.Abs(sum-1) > tol {
								t.Fatalf("row %d sums to 1%+.3g", row, sum-1)
							}
							for j := 0; j < tt; j++ {
								if visible(j) {
									if ref := math.Exp(0.5*s[row*tt+j]-maxv) / refSum; math.Abs(y[row*tt+j]-ref) > tol {
										t.Fatalf("row %d entry %d: %v, reference %v", row, j, y[row*tt+j], ref)
									}
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestMaskedSoftmaxFullyMaskedRow: a query whose every key is hidden gets
// an all-zero row, not NaN, and zero gradient.
func TestMaskedSoftmaxFullyMaskedRow(t *testing.T) {
	scores := tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{3, -2, 1, 4}))
	km := tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{0, 1}))
	y := softmaxOf(t, scores, km, true, 1)
	// query 0 sees only key 0, which is padded; query 1 sees key 1 only.
	want := []float64{0, 0, 0, 1}
	for i := range want {
		if y[i] != want[i] {
			t.Fatalf("softmax = %v, want %v", y, want)
		}
	}
}

// TestMaskedSoftmaxErrors: wrong shapes and scales fail at build time.
func TestMaskedSoftmaxErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := MaskedSoftmax(graphtest.Param(g, "a", graphtest.RandDense(rng, 1, 2, 3, 4)), nil, Mask{Causal: true}, 1); err == nil {
		t.Error("3-D scores accepted")
	}
	if _, err := MaskedSoftmax(graphtest.Param(g, "b", graphtest.RandDense(rng, 1, 1, 1, 3, 4)), nil, Mask{Causal: true}, 1); err == nil {
		t.Error("non-square scores accepted")
	}
	if _, err := MaskedSoftmax(graphtest.Param(g, "c", graphtest.RandDense(rng, 1, 1, 1, 3, 3)), nil, Mask{Causal: true}, math.NaN()); err == nil {
		t.Error("NaN scale accepted")
	}
	if _, err := MaskedSoftmax(graphtest.Param(g, "d", graphtest.RandDense(rng, 1, 2, 1, 3, 3)), graphtest.Param(g, "e", graphtest.RandDense(rng, 1, 3)), Mask{Causal: true}, 1); err == nil {
		t.Error("1-D key mask accepted")
	}
}

// float64s returns a float tensor's entries as float64.
func float64s(d *tensor.Dense) []float64 {
	if d.Dtype() == tensor.Float64 {
		return d.Float64s()
	}
	out := make([]float64, d.Shape().TotalSize())
	for i, v := range d.Float32s() {
		out[i] = float64(v)
	}
	return out
}
