package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// softmaxOf builds and runs MaskedSoftmax on scores (B, H, T, T) and an
// optional key mask (B, T) of the same dtype.
func softmaxOf(t *testing.T, scores, keyMask *tensor.Dense, m Mask, scale float64) []float64 {
	t.Helper()
	g := gorgonia.NewGraph()
	var km *gorgonia.Node
	if keyMask != nil {
		km = graphtest.Param(g, "key_mask", keyMask)
	}
	y, err := MaskedSoftmax(graphtest.Param(g, "scores", scores), km, m, scale)
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Run(t, g)
	return graphtest.Values(t, y)
}

// softmaxDtypes are the dtypes the softmax is tested in, with the tolerance
// of each against a float64 reference.
var softmaxDtypes = []struct {
	dt  tensor.Dtype
	tol float64
}{{tensor.Float64, 1e-12}, {tensor.Float32, 1e-6}}

// softmaxInputs is scores (B, H, T, T) and, when keyMask is not nil, a key
// mask (B, T) holding it, both in dtype dt.
func softmaxInputs(dt tensor.Dtype, scores *tensor.Dense, keyMask []float64) (*tensor.Dense, *tensor.Dense) {
	var km *tensor.Dense
	if keyMask != nil {
		km = tensor.New(tensor.WithShape(scores.Shape()[0], scores.Shape()[2]), tensor.WithBacking(slices.Clone(keyMask)))
	}
	if dt == tensor.Float32 {
		scores = graphtest.ToF32(scores)
		if km != nil {
			km = graphtest.ToF32(km)
		}
	}
	return scores, km
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
	for _, c := range softmaxDtypes {
		dt, tol := c.dt, c.tol
		for _, std := range []float64{1, 1e3} {
			for _, causal := range []bool{true, false} {
				for _, masked := range []bool{false, true} {
					t.Run(fmt.Sprintf("%v/std=%g/causal=%t/keymask=%t", dt, std, causal, masked), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(11, uint64(std)))
						var km []float64
						if masked {
							km = keyMask
						}
						scores, kmDense := softmaxInputs(dt, graphtest.RandDense(rng, std, b, h, tt, tt), km)
						s := graphtest.Float64s(t, "scores", scores)
						y := softmaxOf(t, scores, kmDense, Mask{Causal: causal}, 0.5)
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

// TestMaskedSoftmaxWindowAndALiBi compares MaskedSoftmax with a float64
// loop over every (query, key) pair for sliding windows and ALiBi slopes,
// causal and not, with a key mask: visible entries within 1e-12 (float64)
// or 1e-6 (float32) of the reference, every other entry exactly 0.
func TestMaskedSoftmaxWindowAndALiBi(t *testing.T) {
	const b, h, tt = 2, 3, 6
	keyMask := []float64{1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1}
	slopes := []float64{0.5, 0.25, 0.125}
	for _, c := range softmaxDtypes {
		dt, tol := c.dt, c.tol
		for _, m := range []Mask{
			{Causal: true, Window: 2},
			{Causal: true, Window: 1},
			{Window: 2},
			{Causal: true, Slopes: slopes},
			{Slopes: slopes},
			{Causal: true, Window: 3, Slopes: slopes},
		} {
			for _, masked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%v/keymask=%t", dt, m, masked), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(17, uint64(m.Window)))
					var km []float64
					if masked {
						km = keyMask
					}
					scores, kmDense := softmaxInputs(dt, graphtest.RandDense(rng, 2, b, h, tt, tt), km)
					s := graphtest.Float64s(t, "scores", scores)
					y := softmaxOf(t, scores, kmDense, m, 0.5)
					for row := 0; row < b*h*tt; row++ {
						bi, hi, i := row/(h*tt), row/tt%h, row%tt
						visible := func(j int) bool {
							if m.Causal && j > i {
								return false
							}
							if m.Window > 0 && (j <= i-m.Window || j >= i+m.Window) {
								return false
							}
							return !masked || keyMask[bi*tt+j] != 0
						}
						z := make([]float64, tt)
						maxv, sum := math.Inf(-1), 0.0
						for j := range z {
							if visible(j) {
								z[j] = 0.5 * s[row*tt+j]
								if m.Slopes != nil {
									z[j] -= m.Slopes[hi] * math.Abs(float64(i-j))
								}
								maxv = math.Max(maxv, z[j])
							}
						}
						for j := range z {
							if visible(j) {
								sum += math.Exp(z[j] - maxv)
							}
						}
						for j := range z {
							got := y[row*tt+j]
							if !visible(j) {
								if got != 0 {
									t.Fatalf("row %d (query %d): hidden key %d has weight %v", row, i, j, got)
								}
								continue
							}
							if want := math.Exp(z[j]-maxv) / sum; math.Abs(got-want) > tol {
								t.Fatalf("row %d (query %d) key %d: %v, want %v", row, i, j, got, want)
							}
						}
					}
				})
			}
		}
	}
}

// TestMaskedSoftmaxMaskErrors: a negative window and a slope count other
// than the number of heads are refused at build time, naming the numbers.
func TestMaskedSoftmaxMaskErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	rng := rand.New(rand.NewPCG(1, 1))
	scores := graphtest.Param(g, "scores", graphtest.RandDense(rng, 1, 1, 2, 3, 3))
	if _, err := MaskedSoftmax(scores, nil, Mask{Window: -1}, 1); err == nil || err.Error() != "masked softmax: window -1 must not be negative" {
		t.Errorf("negative window: %v", err)
	}
	if _, err := MaskedSoftmax(scores, nil, Mask{Slopes: []float64{1}}, 1); err == nil || err.Error() != "masked softmax: 1 ALiBi slopes for 2 heads" {
		t.Errorf("slopes: %v", err)
	}
}

// TestMaskedSoftmaxFullyMaskedRow: a query whose every key is hidden gets
// an all-zero row, not NaN, and zero gradient.
func TestMaskedSoftmaxFullyMaskedRow(t *testing.T) {
	scores := tensor.New(tensor.WithShape(1, 1, 2, 2), tensor.WithBacking([]float64{3, -2, 1, 4}))
	km := tensor.New(tensor.WithShape(1, 2), tensor.WithBacking([]float64{0, 1}))
	y := softmaxOf(t, scores, km, Mask{Causal: true}, 1)
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
