package layers

import (
	"math/rand/v2"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"
)

// FillDropoutMask overwrites mask (float32 or float64) with inverted-dropout
// factors drawn from rng: each entry is 0 with probability p, else 1/(1-p),
// so that the expected value of a masked activation is unchanged. p = 0
// gives all ones. Pass the mask's value to a graph's dropout mask input
// (HadamardProd in MultiHeadSelfAttention.Forward) instead of using
// gorgonia.Dropout, whose backward divides by p, whose mode is shared by
// every machine on the graph and which seeds from the clock.
func FillDropoutMask(mask *tensor.Dense, p float64, rng *rand.Rand) error {
	if !(p >= 0 && p < 1) {
		return errors.Errorf("dropout probability %v: must be in [0, 1)", p)
	}
	keep := 1 / (1 - p)
	switch d := mask.Data().(type) {
	case []float64:
		for i := range d {
			d[i] = 0
			if rng.Float64() >= p {
				d[i] = keep
			}
		}
	case []float32:
		for i := range d {
			d[i] = 0
			if rng.Float64() >= p {
				d[i] = float32(keep)
			}
		}
	default:
		return errors.Errorf("dropout mask dtype %v: want float32 or float64", mask.Dtype())
	}
	return nil
}
