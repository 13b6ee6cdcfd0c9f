package layers

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MaskedSoftmax returns softmax over the last axis of scale*scores for
// attention scores (B, H, T, T) (rows = queries, columns = keys). When causal,
// key j is hidden from query i > ... i.e. allowed only for j <= i; when keyMask
// (B, T) is non-nil, keys whose mask entry is 0 are hidden. Hidden entries
// are exactly 0, each row's max is its own (so logits of any size are safe),
// and a row with every key hidden is all zeros rather than NaN.
//
// It replaces gorgonia.SoftMax, whose last-axis kernel subtracts the
// tensor's first element instead of each row's max (see GORGONIA.md).
func MaskedSoftmax(scores, keyMask *gorgonia.Node, causal bool, scale float64) (*gorgonia.Node, error) {
	s := scores.Shape()
	if len(s) != 4 || s[2] != s[3] {
		return nil, errors.Errorf("masked softmax: scores shape %v, want (B, H, T, T)", s)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, errors.Errorf("masked softmax: scale %v must be positive and finite", scale)
	}
	op := maskedSoftmaxOp{
		opBase: opBase{fmt.Sprintf("MaskedSoftmax{causal=%t,keymask=%t,scale=%v}", causal, keyMask != nil, scale)},
		causal: causal, keyMask: keyMask != nil, scale: scale,
	}
	if keyMask == nil {
		return gorgonia.ApplyOp(op, scores) // (B, H, T, T)
	}
	if km := keyMask.Shape(); len(km) != 2 || km[0] != s[0] || km[1] != s[3] {
		return nil, errors.Errorf("masked softmax: key mask shape %v, want (%d, %d)", km, s[0], s[3])
	}
	return gorgonia.ApplyOp(op, scores, keyMask) // (B, H, T, T)
}

type maskedSoftmaxOp struct {
	opBase
	causal, keyMask bool
	scale           float64
}

func (op maskedSoftmaxOp) Arity() int {
	if op.keyMask {
		return 2
	}
	return 1
}

func (op maskedSoftmaxOp) Type() hm.Type {
	if op.keyMask {
		return hm.NewFnType(floatTensor(4), floatTensor(2), floatTensor(4))
	}
	return hm.NewFnType(floatTensor(4), floatTensor(4))
}

func (op maskedSoftmaxOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, op.Arity())
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

func (op maskedSoftmaxOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	x, err := denseArg(inputs, 0, 4, "masked softmax")
	if err != nil {
		return nil, err
	}
	args := []*tensor.Dense{x}
	s := x.Shape()
	if s[2] != s[3] {
		return nil, errors.Errorf("masked softmax: scores shape %v, want (B, H, T, T)", s)
	}
	if op.keyMask {
		m, err := denseArg(inputs, 1, 2, "masked softmax")
		if err != nil {
			return nil, err
		}
		if m.Shape()[0] != s[0] || m.Shape()[1] != s[3] {
			return nil, errors.Errorf("masked softmax: key mask shape %v, want (%d, %d)", m.Shape(), s[0], s[3])
		}
		args = append(args, m)
	}
	if err := sameDtype("masked softmax", args...); err != nil {
		return nil, err
	}
	y := newLike(x, s...)
	if x.Dtype() == tensor.Float64 {
		maskedSoftmax[float64](op, args, y)
	} else {
		maskedSoftmax[float32](op, args, y)
	}
	return y, nil
}

func maskedSoftmax[T float](op maskedSoftmaxOp, args []*tensor.Dense, y *tensor.Dense) {
	s := args[0].Shape()
	b, h, t := s[0], s[1], s[2]
	xd, yd := args[0].Data().([]T), y.Data().([]T)
	var mask []T
	if len(args) == 2 {
		mask = args[1].Data().([]T)
	}
	for bi := 0; bi < b; bi++ {
		var km []T
		if mask != nil {
			km = mask[bi*t : (bi+1)*t]
		}
		for hi := 0; hi < h; hi++ {
			for i := 0; i < t; i++ {
				off := ((bi*h+hi)*t + i) * t
				row, out := xd[off:off+t], yd[off:off+t]
				keys := t
				if op.causal {
					keys = i + 1
				}
				maxv := math.Inf(-1)
				for j := 0; j < keys; j++ {
					if km != nil && km[j] == 0 {
						continue
					}
					maxv = math.Max(maxv, op.scale*float64(row[j]))
				}
				if math.IsInf(maxv, -1) {
					continue // every key hidden: the row stays all zeros
				}
				var sum float64
				for j := 0; j < keys; j++ {
					if km != nil && km[j] == 0 {
						continue
					}
					e := math.Exp(op.scale*float64(row[j]) - maxv)
					out[j] = T(e)
					sum += e
				}
				inv := 1 / sum
				for j := 0; j < keys; j++ {
					out[j] = T(float64(out[j]) * inv)
				}
			}
		}
	}
}

func (op maskedSoftmaxOp) DiffWRT(inputs int) []bool {
	diff := make([]bool, inputs)
	diff[0] = true
	return diff
}

// SymDiff: dx = scale * y * (dy - sum_j y_j dy_j) per row; hidden entries
// have y = 0 and so get no gradient. The key mask is not differentiable.
func (op maskedSoftmaxOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	gop := softmaxGradOp{opBase{fmt.Sprintf("MaskedSoftmaxGrad{scale=%v}", op.scale)}, op.scale}
	dx, err := gorgonia.ApplyOp(gop, output, grad) // (B, H, T, T)
	if err != nil {
		return nil, errors.Wrap(err, "masked softmax gradient")
	}
	grads := make(gorgonia.Nodes, len(inputs))
	grads[0] = dx
	return grads, nil
}

// softmaxGradOp maps (y, dy) to scale * y * (dy - rowsum(y * dy)) over the
// last axis.
type softmaxGradOp struct {
	opBase
	scale float64
}

func (op softmaxGradOp) Arity() int { return 2 }

func (op softmaxGradOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(4), floatTensor(4), floatTensor(4))
}

func (op softmaxGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 2)
	if err != nil {
		return nil, err
	}
	if !s[0].Eq(s[1]) {
		return nil, errors.Errorf("masked softmax gradient: y %v and dy %v differ", s[0], s[1])
	}
	return s[0].Clone(), nil
}

func (op softmaxGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	y, err := denseArg(inputs, 0, 4, "masked softmax gradient")
	if err != nil {
		return nil, err
	}
	dy, err := denseArg(inputs, 1, 4, "masked softmax gradient")
	if err != nil {
		return nil, err
	}
	if err := sameDtype("masked softmax gradient", y, dy); err != nil {
		return nil, err
	}
	if !y.Shape().Eq(dy.Shape()) {
		return nil, errors.Errorf("masked softmax gradient: y %v and dy %v differ", y.Shape(), dy.Shape())
	}
	dx := newLike(y, y.Shape()...)
	t := y.Shape()[3]
	if y.Dtype() == tensor.Float64 {
		softmaxGrad(y.Float64s(), dy.Float64s(), dx.Float64s(), t, op.scale)
	} else {
		softmaxGrad(y.Float32s(), dy.Float32s(), dx.Float32s(), t, op.scale)
	}
	return dx, nil
}

func softmaxGrad[T float](y, dy, dx []T, t int, scale float64) {
	for off := 0; off < len(y); off += t {
		yr, dyr, dxr := y[off:off+t], dy[off:off+t], dx[off:off+t]
		var dot float64
		for j, v := range yr {
			dot += float64(v) * float64(dyr[j])
		}
		for j, v := range yr {
			dxr[j] = T(scale * float64(v) * (float64(dyr[j]) - dot))
		}
	}
}
