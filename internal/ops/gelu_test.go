package ops

import (
	"testing"

	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestGELUMatchesPyTorch: values of torch.nn.functional.gelu(x,
// approximate="tanh") in float64 (PyTorch 1.13), tolerance 1e-15 absolute.
func TestGELUMatchesPyTorch(t *testing.T) {
	x := []float64{-3, -1, -0.5, 0, 0.5, 1, 3}
	want := []float64{-0.0036373920817729943, -0.15880800939172324, -0.15428599017485606, 0,
		0.34571400982514394, 0.8411919906082768, 2.996362607918227}
	g := gorgonia.NewGraph()
	y := graphtest.Must(t)(GELU(graphtest.Param(g, "x", tensor.New(tensor.WithShape(1, len(x)), tensor.WithBacking(x)))))
	graphtest.Run(t, g)
	if e := graphtest.MaxAbsDiff(t, graphtest.Values(t, y), want); e > 1e-15 {
		t.Errorf("GELU differs from PyTorch by %.3g: %v", e, graphtest.Values(t, y))
	}
}
