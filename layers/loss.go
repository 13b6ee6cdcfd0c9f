package layers

import (
	"math"

	"github.com/chewxy/hm"
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
	return gorgonia.ApplyOp(crossEntropyOp{opBase{"MaskedCrossEntropy"}, new([]float64)}, logits, targets, mask) // scalar
}

type crossEntropyOp struct {
	opBase
	rowLoss *[]float64 // per-row terms, reused: summed in row order, so the loss does not depend on how rows were split over the cores
}

func (op crossEntropyOp) Arity() int { return 3 }

func (op crossEntropyOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(2), intVector(), floatTensor(1), hm.TypeVariable('a'))
}

func (op crossEntropyOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	if _, err := shapes(ds, 3); err != nil {
		return nil, err
	}
	return tensor.ScalarShape(), nil
}

// ceArgs unpacks and checks logits, targets and mask.
func ceArgs(inputs []gorgonia.Value, op string) (logits *tensor.Dense, targets []int, mask *tensor.Dense, err error) {
	if logits, err = denseArg(inputs, 0, 2, op); err != nil {
		return nil, nil, nil, err
	}
	t, err := denseArg(inputs, 1, 1, op)
	if err != nil {
		return nil, nil, nil, err
	}
	if mask, err = denseArg(inputs, 2, 1, op); err != nil {
		return nil, nil, nil, err
	}
	if err = sameDtype(op, logits, mask); err != nil {
		return nil, nil, nil, err
	}
	n, v := logits.Shape()[0], logits.Shape()[1]
	if t.Dtype() != tensor.Int || t.Shape()[0] != n || mask.Shape()[0] != n {
		return nil, nil, nil, errors.Errorf("%s: logits %v, targets %v of %v, mask %v do not match", op, logits.Shape(), t.Shape(), t.Dtype(), mask.Shape())
	}
	targets = t.Ints()
	for i, id := range targets {
		if id < 0 || id >= v {
			return nil, nil, nil, errors.Errorf("%s: target %d at position %d is outside the vocabulary [0, %d)", op, id, i, v)
		}
	}
	return logits, targets, mask, nil
}

func (op crossEntropyOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	logits, targets, mask, err := ceArgs(inputs, "cross entropy")
	if err != nil {
		return nil, err
	}
	n := len(targets)
	if cap(*op.rowLoss) < n {
		*op.rowLoss = make([]float64, n)
	}
	rows := (*op.rowLoss)[:n]
	if logits.Dtype() == tensor.Float64 {
		return gorgonia.NewF64(crossEntropy(logits.Float64s(), targets, mask.Float64s(), rows)), nil
	}
	return gorgonia.NewF32(float32(crossEntropy(logits.Float32s(), targets, mask.Float32s(), rows))), nil
}

// crossEntropy accumulates in float64 whatever the storage type; the rows'
// log-sum-exps are computed on all cores into rows, then summed in order.
func crossEntropy[T float](logits []T, targets []int, mask []T, rows []float64) float64 {
	v := len(logits) / len(targets)
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
	if count == 0 {
		return 0
	}
	return total / count
}

// logSumExp is log sum_j exp(row[j]), computed as max + log sum exp(row -
// max); float32 rows use the vector exp kernel (scratch holds the
// exponentials, len(row) long).
func logSumExp[T float](row []T, scratch []float32) float64 {
	if r32, ok := any(row).([]float32); ok {
		m := kernels.MaxOf(r32)
		return float64(m) + math.Log(float64(kernels.ExpShift(r32, scratch, 1, m)))
	}
	maxv := row[0]
	for _, x := range row[1:] {
		if x > maxv {
			maxv = x
		}
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x) - float64(maxv))
	}
	return float64(maxv) + math.Log(sum)
}

func (op crossEntropyOp) DiffWRT(inputs int) []bool {
	diff := make([]bool, inputs)
	diff[0] = true
	return diff
}

func (op crossEntropyOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	dl, err := gorgonia.ApplyOp(crossEntropyGradOp{opBase{"MaskedCrossEntropyGrad"}, newBuffer()}, inputs[0], inputs[1], inputs[2], grad) // (N, V)
	if err != nil {
		return nil, errors.Wrap(err, "cross entropy gradient")
	}
	return gorgonia.Nodes{dl, nil, nil}, nil
}

// crossEntropyGradOp maps (logits, targets, mask, dloss) to
// dloss * (softmax(logits) - onehot(targets)) * mask / sum(mask).
type crossEntropyGradOp struct {
	opBase
	out *buffer
}

func (op crossEntropyGradOp) Arity() int { return 4 }

func (op crossEntropyGradOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(floatTensor(2), intVector(), floatTensor(1), a, floatTensor(2))
}

func (op crossEntropyGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 4)
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op crossEntropyGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	logits, targets, mask, err := ceArgs(inputs, "cross entropy gradient")
	if err != nil {
		return nil, err
	}
	if len(inputs) != 4 {
		return nil, errors.Errorf("cross entropy gradient: %d inputs, want 4", len(inputs))
	}
	dy, err := scalarArg(inputs[3], "cross entropy gradient")
	if err != nil {
		return nil, err
	}
	dl := op.out.get(logits.Dtype(), logits.Shape()...)
	if logits.Dtype() == tensor.Float64 {
		crossEntropyGrad(logits.Float64s(), targets, mask.Float64s(), dy, dl.Float64s())
	} else {
		crossEntropyGrad(logits.Float32s(), targets, mask.Float32s(), dy, dl.Float32s())
	}
	return dl, nil
}

// crossEntropyGrad writes every row of dl (the buffer is reused): unscored
// rows 0, scored rows w * (softmax(row) - onehot(target)); rows are spread
// over the cores.
func crossEntropyGrad[T float](logits []T, targets []int, mask []T, dy float64, dl []T) {
	v := len(logits) / len(targets)
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
			w := dy * float64(mask[n]) / count
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
