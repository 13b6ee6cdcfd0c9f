package ops

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestSplitHeadsLayout: SplitHeads puts x[(b*T+t), p*D + h*d + c] at
// [p, b, h, t, c], checked entry by entry against that formula at a size
// large enough to be split over the cores, and MergeHeads of each part
// gives back its columns of x.
func TestSplitHeadsLayout(t *testing.T) {
	const b, tt, h, d = 96, 16, 4, 16 // B*T*3*H*d = 1.2M floats: above parallelMinWork
	rng := rand.New(rand.NewPCG(23, 24))
	xv := graphtest.ToF32(graphtest.RandDense(rng, 1, b*tt, 3*h*d))
	g := gorgonia.NewGraph()
	x := graphtest.Param(g, "x", xv)
	heads := graphtest.Must(t)(SplitHeads(x, Heads{B: b, T: tt, H: h, D: d}, 3))
	q := graphtest.Must(t)(gorgonia.Slice(heads, gorgonia.S(0)))
	merged := graphtest.Must(t)(MergeHeads(q))
	graphtest.Run(t, g)
	got, src := graphtest.Values(t, heads), xv.Float32s()
	for p := 0; p < 3; p++ {
		for bi := 0; bi < b; bi++ {
			for hi := 0; hi < h; hi++ {
				for ti := 0; ti < tt; ti++ {
					for c := 0; c < d; c++ {
						want := src[(bi*tt+ti)*3*h*d+p*h*d+hi*d+c]
						if v := got[(((p*b+bi)*h+hi)*tt+ti)*d+c]; v != float64(want) {
							t.Fatalf("heads[%d,%d,%d,%d,%d] = %v, want x[%d, %d] = %v", p, bi, hi, ti, c, v, bi*tt+ti, p*h*d+hi*d+c, want)
						}
					}
				}
			}
		}
	}
	back := graphtest.Values(t, merged)
	for r := 0; r < b*tt; r++ {
		for j := 0; j < h*d; j++ {
			if back[r*h*d+j] != float64(src[r*3*h*d+j]) {
				t.Fatalf("merge(split(x))[%d, %d] = %v, want %v", r, j, back[r*h*d+j], src[r*3*h*d+j])
			}
		}
	}
}
