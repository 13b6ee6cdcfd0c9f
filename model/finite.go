package model

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
)

// NonFinite is the error of a forward pass that produced a NaN or an
// infinity, what naming where ("the logits at position 3 are NaN"): weights
// that are finite but huge (3e38) overflow in the pass, so the error names
// the largest one as the likely cause. Every command that runs a model
// reports a non-finite pass with these words.
func NonFinite(m *Model, what string) error {
	return errors.Errorf("non-finite activations: %s; %s", what, largestWeight(m))
}

// CheckLogits refuses logits, rows of Config.Vocab values, that hold a NaN
// or an infinity, naming position(row) of the first row that does.
func CheckLogits(m *Model, logits []float64, position func(row int) int) error {
	for i, v := range logits {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return NonFinite(m, fmt.Sprintf("the logits at position %d are %v", position(i/m.Config.Vocab), v))
		}
	}
	return nil
}

// largestWeight names the model's largest weight in magnitude, the likely
// cause of a non-finite forward pass.
func largestWeight(m *Model) string {
	name, largest := "", 0.0
	for _, p := range m.Params {
		vals, err := Float64s(p.Value)
		if err != nil {
			continue
		}
		for _, v := range vals {
			if math.Abs(v) > largest {
				name, largest = p.Name, math.Abs(v)
			}
		}
	}
	return fmt.Sprintf("the forward pass overflows %v (largest |weight| %.3g, in %s)", m.Dtype, largest, name)
}
