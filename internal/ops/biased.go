package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BiasedSoftmax returns softmax over the last axis of scale*scores + bias,
// for scores and bias of one shape (..., K) (rank 4). A key whose bias is
// -Inf gets exactly 0 and a row with every key at -Inf is all zeros, as in
// MaskedSoftmax. It is the decoding step's softmax: one query per row reads
// a cache of keys, and the bias, filled by the caller before each run,
// carries what MaskedSoftmax derives from the query's position (the causal
// and window limits as -Inf, ALiBi's -m_h*(i-j)). It has no gradient.
func BiasedSoftmax(scores, bias *gorgonia.Node, scale float64) (*gorgonia.Node, error) {
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("biased softmax: scale %v must be positive and finite", scale)
	}
	if !scores.Shape().Eq(bias.Shape()) {
		return nil, errors.Errorf("biased softmax: scores shape %v and bias shape %v differ", scores.Shape(), bias.Shape())
	}
	return apply(biasedDef{scale: scale}, scores, bias) // (..., K)
}

type biasedDef struct{ scale float64 }

func (d biasedDef) String() string { return fmt.Sprintf("BiasedSoftmax{scale=%v}", d.scale) }

func (d biasedDef) signature() signature {
	return signature{in: []input{floatIn(4, false), floatIn(4, false)}, out: 4}
}

func (d biasedDef) shape(s []tensor.Shape) (tensor.Shape, error) { return same(d.String(), s...) }

func (d biasedDef) run(a *args) error {
	return byDtype(d, a, biasedSoftmax[float64], biasedSoftmax[float32])
}

// biasedSoftmax works row by row in float64: the rows are short (one query
// against the cache) and few.
func biasedSoftmax[T float](d biasedDef, a *args) {
	s := a.in[0].Shape()
	k := s[len(s)-1]
	x, bias, y := data[T](a, 0), data[T](a, 1), out[T](a)
	for r := 0; r < len(x)/max(k, 1); r++ {
		row, b, o := x[r*k:(r+1)*k], bias[r*k:(r+1)*k], y[r*k:(r+1)*k]
		maxv := math.Inf(-1)
		for j, v := range row {
			if !math.IsInf(float64(b[j]), -1) {
				maxv = math.Max(maxv, d.scale*float64(v)+float64(b[j]))
			}
		}
		if math.IsInf(maxv, -1) {
			clear(o)
			continue
		}
		var sum float64
		for j, v := range row {
			if math.IsInf(float64(b[j]), -1) {
				o[j] = 0
				continue
			}
			e := math.Exp(d.scale*float64(v) + float64(b[j]) - maxv)
			o[j] = T(e)
			sum += e
		}
		inv := 1 / sum
		for j := range o {
			o[j] = T(float64(o[j]) * inv)
		}
	}
}
