package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestMaskScores: on scores (2, 2, 5, 5) with a causal window of 3, ALiBi
// slopes and a key mask, in float64 and float32, each entry a query sees
// is scale*s - slope*|i-j| (to the dtype's rounding, 1e-12 or 1e-6), each
// other one -Inf, and the softmax of them at scale 1 without slopes is the
// softmax of the scores with them at scale, as the attention's weights are
// built either way.
func TestMaskScores(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mask := Mask{Causal: true, Window: 3, Slopes: []float64{0.5, 0.25}}
	keep := []float64{1, 1, 0, 1, 1, 1, 0, 1, 1, 1}
	const scale = 0.7
	for _, c := range softmaxDtypes {
		scores, km := softmaxInputs(c.dt, graphtest.RandDense(rng, 2, 2, 2, 5, 5), keep)
		g := gorgonia.NewGraph()
		kmNode := graphtest.Param(g, "key_mask", km)
		masked, err := MaskScores(graphtest.Param(g, "scores", scores), kmNode, mask, scale)
		if err != nil {
			t.Fatal(err)
		}
		graphtest.Run(t, g)
		got, s := graphtest.Values(t, masked), graphtest.Values(t, graphtest.Param(gorgonia.NewGraph(), "s", scores))
		for r := range len(s) / 5 {
			i, h, b := r%5, r/5%2, r/10
			lo, hi := mask.keys(i, 5)
			for j := range 5 {
				at := r*5 + j
				if j < lo || j >= hi || keep[b*5+j] == 0 {
					if !math.IsInf(got[at], -1) {
						t.Fatalf("%v: entry (%d, %d, %d, %d) is %v, want -Inf", c.dt, b, h, i, j, got[at])
					}
					continue
				}
				want := scale*s[at] - mask.Slopes[h]*math.Abs(float64(i-j))
				if math.Abs(got[at]-want) > c.tol*math.Max(1, math.Abs(want)) {
					t.Fatalf("%v: entry (%d, %d, %d, %d) is %v, want %v", c.dt, b, h, i, j, got[at], want)
				}
			}
		}
		plain := mask
		plain.Slopes = nil
		via := softmaxOf(t, tensor.New(tensor.WithShape(masked.Shape()...), tensor.WithBacking(maskedValue(masked))), km, plain, 1)
		direct := softmaxOf(t, scores, km, mask, scale)
		for i := range direct {
			if math.Abs(via[i]-direct[i]) > c.tol {
				t.Fatalf("%v: weight %d is %v through the masked scores, %v from the scores", c.dt, i, via[i], direct[i])
			}
		}
	}
}

// maskedValue is a copy of n's value backing, in its dtype.
func maskedValue(n *gorgonia.Node) any {
	switch v := n.Value().Data().(type) {
	case []float32:
		return append([]float32(nil), v...)
	case []float64:
		return append([]float64(nil), v...)
	}
	return nil
}

// TestMaskScoresErrors: a scale that is not positive and finite, and
// slopes that are not one per head, are refused.
func TestMaskScoresErrors(t *testing.T) {
	g := gorgonia.NewGraph()
	s := graphtest.Param(g, "s", graphtest.RandDense(rand.New(rand.NewPCG(1, 1)), 1, 1, 2, 3, 3))
	for _, scale := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := MaskScores(s, nil, Mask{Causal: true}, scale); err == nil {
			t.Errorf("scale %v accepted", scale)
		}
	}
	if _, err := MaskScores(s, nil, Mask{Causal: true, Slopes: []float64{1}}, 1); err == nil {
		t.Error("one slope for two heads accepted")
	}
}
