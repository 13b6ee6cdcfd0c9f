package layers

import (
	"fmt"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// The two batched products of attention, on the q, k, v heads packed as
// splitHeads leaves them, (3, B, H, T, d):
//
//	attnScores(qkv)       = q k^T  (B, H, T, T)
//	attnApply(w, qkv)     = w v    (B, H, T, d)
//
// They are gorgonia.BatchedMatMul with the transpose flags it would be given,
// minus what makes it slow: it slices a view per (b, h) pair and allocates
// the output on every run. Here each (b, h) pair is one GEMM over contiguous
// memory, pairs are spread over the cores, and outputs are reused buffers.

// attnScores returns q k^T for every (b, h) of qkv (3, B, H, T, d).
func attnScores(qkv *gorgonia.Node) (*gorgonia.Node, error) {
	s := qkv.Shape()
	if len(s) != 5 || s[0] != 3 {
		return nil, errors.Errorf("attention scores: input %v is not (3, B, H, T, d)", s)
	}
	return gorgonia.ApplyOp(newAttnMMOp(mmScores, s[1], s[2], s[3], s[4]), qkv) // (B, H, T, T)
}

// attnApply returns w v for weights w (B, H, T, T) and the v of qkv.
func attnApply(w, qkv *gorgonia.Node) (*gorgonia.Node, error) {
	s, ws := qkv.Shape(), w.Shape()
	if len(s) != 5 || s[0] != 3 || !ws.Eq(tensor.Shape{s[1], s[2], s[3], s[3]}) {
		return nil, errors.Errorf("attention apply: weights %v and qkv %v are not (B, H, T, T) and (3, B, H, T, d)", ws, s)
	}
	return gorgonia.ApplyOp(newAttnMMOp(mmApply, s[1], s[2], s[3], s[4]), w, qkv) // (B, H, T, d)
}

// mmKind selects one of the products (forward) or their gradients.
type mmKind int

const (
	mmScores     mmKind = iota // (qkv) -> q k^T
	mmApply                    // (w, qkv) -> w v
	mmScoresGrad               // (qkv, dS) -> packed [dS k | dS^T q | 0]
	mmApplyGradW               // (qkv, dY) -> dY v^T
	mmApplyGradV               // (w, dY) -> packed [0 | 0 | w^T dY]
)

var mmNames = [...]string{"AttnScores", "AttnApply", "AttnScoresGrad", "AttnApplyGradW", "AttnApplyGradV"}

type attnMMOp struct {
	opBase
	kind               mmKind
	batch, heads, t, d int
	out                *buffer
}

func newAttnMMOp(kind mmKind, batch, heads, t, d int) attnMMOp {
	return attnMMOp{
		opBase: opBase{fmt.Sprintf("%s{B=%d,H=%d,T=%d,d=%d}", mmNames[kind], batch, heads, t, d)},
		kind:   kind, batch: batch, heads: heads, t: t, d: d, out: newBuffer(),
	}
}

func (op attnMMOp) packed() tensor.Shape { return tensor.Shape{3, op.batch, op.heads, op.t, op.d} }
func (op attnMMOp) square() tensor.Shape { return tensor.Shape{op.batch, op.heads, op.t, op.t} }
func (op attnMMOp) heads4() tensor.Shape { return tensor.Shape{op.batch, op.heads, op.t, op.d} }

// io returns the input shapes and the output shape of the op.
func (op attnMMOp) io() ([]tensor.Shape, tensor.Shape) {
	switch op.kind {
	case mmScores:
		return []tensor.Shape{op.packed()}, op.square()
	case mmApply:
		return []tensor.Shape{op.square(), op.packed()}, op.heads4()
	case mmScoresGrad:
		return []tensor.Shape{op.packed(), op.square()}, op.packed()
	case mmApplyGradW:
		return []tensor.Shape{op.packed(), op.heads4()}, op.square()
	default: // mmApplyGradV
		return []tensor.Shape{op.square(), op.heads4()}, op.packed()
	}
}

func (op attnMMOp) Arity() int {
	in, _ := op.io()
	return len(in)
}

func (op attnMMOp) Type() hm.Type {
	in, out := op.io()
	ts := make([]hm.Type, 0, len(in)+1)
	for _, s := range in {
		ts = append(ts, floatTensor(len(s)))
	}
	return hm.NewFnType(append(ts, floatTensor(len(out)))...)
}

func (op attnMMOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	in, out := op.io()
	s, err := shapes(ds, len(in))
	if err != nil {
		return nil, err
	}
	for i := range in {
		if !s[i].Eq(in[i]) {
			return nil, errors.Errorf("%s: input %d has shape %v, want %v", op.desc, i, s[i], in[i])
		}
	}
	return out, nil
}

func (op attnMMOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	in, out := op.io()
	var args [2]*tensor.Dense
	for i, s := range in {
		a, err := denseArg(inputs, i, len(s), op.desc)
		if err != nil {
			return nil, err
		}
		if !a.Shape().Eq(s) {
			return nil, errors.Errorf("%s: input %d has shape %v, want %v", op.desc, i, a.Shape(), s)
		}
		args[i] = a
	}
	if err := sameDtype(op.desc, args[:len(in)]...); err != nil {
		return nil, err
	}
	y := op.out.get(args[0].Dtype(), out...)
	if y.Dtype() == tensor.Float64 {
		attnMM(op, float64sOf(args[0]), float64sOf(args[1]), y.Float64s())
	} else {
		attnMM(op, float32sOf(args[0]), float32sOf(args[1]), y.Float32s())
	}
	return y, nil
}

func float64sOf(t *tensor.Dense) []float64 {
	if t == nil {
		return nil
	}
	return t.Float64s()
}

func float32sOf(t *tensor.Dense) []float32 {
	if t == nil {
		return nil
	}
	return t.Float32s()
}

// attnMM runs one GEMM per (b, h) pair, the pairs split over the cores.
func attnMM[T float](op attnMMOp, a, b, c []T) {
	t, d := op.t, op.d
	pairs := op.batch * op.heads
	sq, hd := t*t, t*d // sizes of one (b, h) block of a square and a heads tensor
	q, k, v := 0, pairs*hd, 2*pairs*hd
	if op.kind == mmScoresGrad {
		clear(c[v:]) // the v part of the q k^T gradient is zero
	}
	if op.kind == mmApplyGradV {
		clear(c[:v]) // the q and k parts of the w v gradient are zero
	}
	kernels.ParallelFor(pairs, float64(2*t*t*d), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			switch op.kind {
			case mmScores: // S = q k^T
				kernels.Gemm(false, true, t, t, d, a[q+p*hd:], d, a[k+p*hd:], d, 0, c[p*sq:], t)
			case mmApply: // Y = W v
				kernels.Gemm(false, false, t, d, t, a[p*sq:], t, b[v+p*hd:], d, 0, c[p*hd:], d)
			case mmScoresGrad: // dq = dS k, dk = dS^T q
				kernels.Gemm(false, false, t, d, t, b[p*sq:], t, a[k+p*hd:], d, 0, c[q+p*hd:], d)
				kernels.Gemm(true, false, t, d, t, b[p*sq:], t, a[q+p*hd:], d, 0, c[k+p*hd:], d)
			case mmApplyGradW: // dW = dY v^T
				kernels.Gemm(false, true, t, t, d, b[p*hd:], d, a[v+p*hd:], d, 0, c[p*sq:], t)
			case mmApplyGradV: // dv = W^T dY
				kernels.Gemm(true, false, t, d, t, a[p*sq:], t, b[p*hd:], d, 0, c[v+p*hd:], d)
			}
		}
	})
}

func (op attnMMOp) DiffWRT(inputs int) []bool { return []bool{true, true}[:inputs] }

func (op attnMMOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	sub := func(kind mmKind, a, b *gorgonia.Node) (*gorgonia.Node, error) {
		n, err := gorgonia.ApplyOp(newAttnMMOp(kind, op.batch, op.heads, op.t, op.d), a, b)
		return n, errors.Wrapf(err, "%s gradient", op.desc)
	}
	switch op.kind {
	case mmScores:
		dqkv, err := sub(mmScoresGrad, inputs[0], grad) // (3, B, H, T, d)
		return gorgonia.Nodes{dqkv}, err
	case mmApply:
		dw, err := sub(mmApplyGradW, inputs[1], grad) // (B, H, T, T)
		if err != nil {
			return nil, err
		}
		dqkv, err := sub(mmApplyGradV, inputs[0], grad) // (3, B, H, T, d)
		return gorgonia.Nodes{dw, dqkv}, err
	}
	return nil, errors.Errorf("%s has no gradient", op.desc)
}
