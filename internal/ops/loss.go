package ops

import (
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// CrossEntropy returns the scalar mean over scored positions of
// -log softmax(logits[n])[targets[n]], for logits (N, V), Int targets (N) and
// mask (N): position n counts with weight mask[n] and the sum is divided by
// sum(mask); when nothing is scored the loss is 0. Every target must lie in
// [0, V), otherwise running the graph fails naming the position.
//
// It is one fused op because gorgonia.LogSoftMax shares SoftMax's wrong
// last-axis kernel (see docs/gorgonia.md); its gradient is exact:
// (softmax(logits) - onehot(targets)) * mask / sum(mask).
func CrossEntropy(logits, targets, mask *gorgonia.Node) (*gorgonia.Node, error) {
	ls := logits.Shape()
	if len(ls) != 2 {
		return nil, errors.Errorf("cross entropy: logits shape %v, want (N, V)", ls)
	}
	if ts := targets.Shape(); len(ts) != 1 || ts[0] != ls[0] || targets.Dtype() != tensor.Int {
		return nil, errors.Errorf("cross entropy: targets %v of %v, want (%d) Int", ts, targets.Dtype(), ls[0])
	}
	if ms := mask.Shape(); len(ms) != 1 || ms[0] != ls[0] {
		return nil, errors.Errorf("cross entropy: mask shape %v, want (%d)", ms, ls[0])
	}
	return apply(crossEntropyDef{rowLoss: new([]float64)}, logits, targets, mask) // scalar
}

// crossEntropyDef is the loss or, when backward, its gradient
// (logits, targets, mask, dloss) -> dloss * (softmax(logits) -
// onehot(targets)) * mask / sum(mask).
type crossEntropyDef struct {
	backward bool
	rowLoss  *[]float64 // per-row terms, reused: summed in row order, so the loss does not depend on how rows were split over the cores
}

func (d crossEntropyDef) String() string {
	if d.backward {
		return "MaskedCrossEntropyGrad"
	}
	return "MaskedCrossEntropy"
}

func (d crossEntropyDef) signature() signature {
	if d.backward {
		return signature{in: []input{floatIn(2, false), intsIn, floatIn(1, false), scalarIn}, out: 2}
	}
	return signature{in: []input{floatIn(2, true), intsIn, floatIn(1, false)}}
}

func (d crossEntropyDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if n := s[0][0]; s[1][0] != n || s[2][0] != n {
		return nil, errors.Errorf("%v: logits %v, targets %v, mask %v do not match", d, s[0], s[1], s[2])
	}
	if d.backward {
		return s[0].Clone(), nil
	}
	return tensor.ScalarShape(), nil
}

func (d crossEntropyDef) run(a *args) error {
	v := a.in[0].Shape()[1]
	for i, id := range a.ids {
		if id < 0 || id >= v {
			return errors.Errorf("%v: target %d at position %d is outside the vocabulary [0, %d)", d, id, i, v)
		}
	}
	if d.backward {
		return byDtype(d, a, crossEntropyGrad[float64], crossEntropyGrad[float32])
	}
	if n := len(a.ids); cap(*d.rowLoss) < n {
		*d.rowLoss = make([]float64, n)
	}
	return byDtype(d, a, crossEntropy[float64], crossEntropy[float32])
}

// crossEntropy accumulates in float64 whatever the storage type; the rows'
// log-sum-exps are computed on all cores into rowLoss, then summed in order.
func crossEntropy[T float](d crossEntropyDef, a *args) {
	logits, targets, mask := data[T](a, 0), a.ids, data[T](a, 2)
	rows := (*d.rowLoss)[:len(targets)]
	v := a.in[0].Shape()[1]
	kernels.ParallelFor(len(targets), float64(4*v), func(lo, hi int) {
		scratch := kernels.Scratch(v)
		defer kernels.PutScratch(scratch)
		for n := lo; n < hi; n++ {
			if mask[n] == 0 {
				continue
			}
			row := logits[n*v : (n+1)*v]
			rows[n] = float64(mask[n]) * (logSumExp(row, *scratch) - float64(row[targets[n]]))
		}
	})
	var total, count float64
	for n := range targets {
		if mask[n] != 0 {
			total += rows[n]
			count += float64(mask[n])
		}
	}
	a.scalar = 0
	if count != 0 {
		a.scalar = total / count
	}
}

// logSumExp is log sum_j exp(row[j]), computed as max + log sum exp(row -
// max); float32 rows use the vector exp kernel (scratch holds the
// exponentials, len(row) long).
func logSumExp[T float](row []T, scratch []float32) float64 {
	if r32, ok := any(row).([]float32); ok {
		m := kernels.MaxOf(r32)
		return float64(m) + math.Log(float64(kernels.ExpShift(r32, scratch, 1, m)))
	}
	maxv := rowMax(row)
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - float64(maxv))
	}
	return float64(maxv) + math.Log(sum)
}

// crossEntropyGrad writes every row of the output (the buffer is reused):
// unscored rows 0, scored rows w * (softmax(row) - onehot(target)); rows
// are spread over the cores.
func crossEntropyGrad[T float](_ crossEntropyDef, a *args) {
	logits, targets, mask, dl := data[T](a, 0), a.ids, data[T](a, 2), out[T](a)
	v := a.in[0].Shape()[1]
	var count float64
	for _, m := range mask {
		count += float64(m)
	}
	if count == 0 {
		clear(dl)
		return
	}
	kernels.ParallelFor(len(targets), float64(4*v), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			row, out := logits[n*v:(n+1)*v], dl[n*v:(n+1)*v]
			if mask[n] == 0 {
				clear(out)
				continue
			}
			w := a.dy * float64(mask[n]) / count
			softmaxRow(row, out, 1)
			if o32, ok := any(out).([]float32); ok {
				kernels.ScaleBy(o32, float32(w))
			} else {
				for j := range out {
					out[j] = T(w * float64(out[j]))
				}
			}
			out[targets[n]] -= T(w)
		}
	})
}

func (d crossEntropyDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.backward {
		return nil, errors.New("no second derivative")
	}
	dl, err := apply(crossEntropyDef{backward: true}, in[0], in[1], in[2], dy) // (N, V)
	return gorgonia.Nodes{dl, nil, nil}, err
}
