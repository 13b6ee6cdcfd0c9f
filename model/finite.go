package model

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
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
func CheckLogits[T float32 | float64](m *Model, logits []T, position func(row int) int) error {
	if i := FirstNonFinite(logits); i >= 0 {
		return NonFinite(m, fmt.Sprintf("the logits at position %d are %v", position(i/m.Config.Vocab), logits[i]))
	}
	return nil
}

// FirstNonFinite is the index of the first NaN or infinity in xs, or -1.
// A forward over 256 tokens of GPT-2 small's shape checks 22 million
// values and its weights 124 million, so the parts of xs are searched on
// every core, a block at a time through a vector sum (finite unless a
// value is not, or the sum overflows), and only a block whose sum is not
// finite value by value, where v-v (0 for every finite v, NaN for the
// rest) is one test.
func FirstNonFinite[T float32 | float64](xs []T) int {
	var first atomic.Int64
	first.Store(math.MaxInt64)
	kernels.ParallelFor(len(xs), 1, func(lo, hi int) {
		for at := lo; at < hi; at += finiteBlock {
			block := xs[at:min(at+finiteBlock, hi)]
			if s := vectorSum(block); s-s == 0 {
				continue
			}
			for i, v := range block {
				if v-v != 0 {
					for found := int64(at + i); ; {
						seen := first.Load()
						if found >= seen || first.CompareAndSwap(seen, found) {
							return
						}
					}
				}
			}
		}
	})
	if i := first.Load(); i != math.MaxInt64 {
		return int(i)
	}
	return -1
}

// finiteBlock is how many values FirstNonFinite sums at once.
const finiteBlock = 4096

// vectorSum is a sum of xs by the vector kernels, NaN or infinite when a
// value is: the values themselves in float32, their squares in float64
// (the kernels have a dot product there).
func vectorSum[T float32 | float64](xs []T) T {
	switch x := any(xs).(type) {
	case []float32:
		return T(kernels.Sum(x))
	case []float64:
		return T(kernels.Dot(x, x))
	}
	return 0
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
