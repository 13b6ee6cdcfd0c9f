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

// TestMaskedSoftmaxWindowAndALiBi compares MaskedSoftmax with a float64
// loop over every (query, key) pair for sliding windows and ALiBi slopes,
// causal and not, with a key mask: visible entries within 1e-12 (float64)
// or 1e-6 (float32) of the reference, every other entry exactly 0.
func TestMaskedSoftmaxWindowAndALiBi(t *testing.T) {
	const b, h, tt = 2, 3, 6
	keyMask := []float64{1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1}
	slopes := []float64{0.5, 0.25, 0.125}
	for _, dt := range []tensor.Dtype{tensor.Float64, tensor.Float32} {
		tol := 1e-12
		if dt == tensor.Float32 {
			tol = 1e-6
		}
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
					scores := graphtest.RandDense(rng, 2, b, h, tt, tt)
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
					g := gorgonia.NewGraph()
					var kmNode *gorgonia.Node
					if km != nil {
						kmNode = graphtest.Param(g, "key_mask", km)
					}
					yNode, err := MaskedSoftmax(graphtest.Param(g, "scores", scores), kmNode, m, 0.5)
					if err != nil {
						t.Fatal(err)
					}
					graphtest.Run(t, g)
					y := graphtest.Values(t, yNode)
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
