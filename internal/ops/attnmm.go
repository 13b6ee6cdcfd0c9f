package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// The two batched products of attention, on the q, k, v heads packed as
// SplitHeads leaves them, (3, B, H, T, D):
//
//	AttnScores(qkv)       = q k^T  (B, H, T, T)
//	AttnApply(w, qkv)     = w v    (B, H, T, D)
//
// They are gorgonia.BatchedMatMul with the transpose flags it would be given,
// minus what makes it slow: it slices a view per (b, h) pair and allocates
// the output on every run. Here each (b, h) pair is one GEMM over contiguous
// memory, pairs are spread over the cores, and outputs are reused buffers.

// AttnScores returns q k^T for every (b, h) of qkv (3, B, H, T, D).
func AttnScores(qkv *gorgonia.Node) (*gorgonia.Node, error) {
	s := qkv.Shape()
	if len(s) != 5 || s[0] != 3 {
		return nil, errors.Errorf("attention scores: input %v is not (3, B, H, T, D)", s)
	}
	return apply(attnMMDef{mmScores, headsOf(s[1:])}, qkv) // (B, H, T, T)
}

// AttnApply returns w v for weights w (B, H, T, T) and the v of qkv.
func AttnApply(w, qkv *gorgonia.Node) (*gorgonia.Node, error) {
	s, ws := qkv.Shape(), w.Shape()
	if len(s) != 5 || s[0] != 3 || !ws.Eq(headsOf(s[1:]).scores()) {
		return nil, errors.Errorf("attention apply: weights %v and qkv %v are not (B, H, T, T) and (3, B, H, T, D)", ws, s)
	}
	return apply(attnMMDef{mmApply, headsOf(s[1:])}, w, qkv) // (B, H, T, D)
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

type attnMMDef struct {
	kind mmKind
	Heads
}

func (d attnMMDef) String() string { return fmt.Sprintf("%s{%v}", mmNames[d.kind], d.Heads) }

// io returns the input shapes and the output shape.
func (d attnMMDef) io() ([]tensor.Shape, tensor.Shape) {
	qkv, sq, hd := d.packed(3), d.scores(), d.split()
	switch d.kind {
	case mmScores:
		return []tensor.Shape{qkv}, sq
	case mmApply:
		return []tensor.Shape{sq, qkv}, hd
	case mmScoresGrad:
		return []tensor.Shape{qkv, sq}, qkv
	case mmApplyGradW:
		return []tensor.Shape{qkv, hd}, sq
	default: // mmApplyGradV
		return []tensor.Shape{sq, hd}, qkv
	}
}

func (d attnMMDef) signature() signature {
	in, out := d.io()
	sig := signature{out: len(out)}
	for _, s := range in {
		sig.in = append(sig.in, floatIn(len(s), d.kind <= mmApply))
	}
	return sig
}

func (d attnMMDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	in, out := d.io()
	for i := range in {
		if !s[i].Eq(in[i]) {
			return nil, errors.Errorf("%v: input %d has shape %v, want %v", d, i, s[i], in[i])
		}
	}
	return out, nil
}

func (d attnMMDef) run(a *args) error { return byDtype(d, a, attnMM[float64], attnMM[float32]) }

// attnMM runs one GEMM per (b, h) pair, the pairs split over the cores.
func attnMM[T float](d attnMMDef, a *args) {
	x, y, c := data[T](a, 0), []T(nil), out[T](a)
	if len(a.in) > 1 {
		y = data[T](a, 1)
	}
	t, n := d.T, d.D
	pairs := d.B * d.H
	sq, hd := t*t, t*n // sizes of one (b, h) block of a scores and a heads tensor
	q, k, v := 0, pairs*hd, 2*pairs*hd
	if d.kind == mmScoresGrad {
		clear(c[v:]) // the v part of the q k^T gradient is zero
	}
	if d.kind == mmApplyGradV {
		clear(c[:v]) // the q and k parts of the w v gradient are zero
	}
	kernels.ParallelFor(pairs, float64(2*t*t*n), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			switch d.kind {
			case mmScores: // S = q k^T
				kernels.Gemm(false, true, t, t, n, x[q+p*hd:], n, x[k+p*hd:], n, 0, c[p*sq:], t)
			case mmApply: // Y = W v
				kernels.Gemm(false, false, t, n, t, x[p*sq:], t, y[v+p*hd:], n, 0, c[p*hd:], n)
			case mmScoresGrad: // dq = dS k, dk = dS^T q
				kernels.Gemm(false, false, t, n, t, y[p*sq:], t, x[k+p*hd:], n, 0, c[q+p*hd:], n)
				kernels.Gemm(true, false, t, n, t, y[p*sq:], t, x[q+p*hd:], n, 0, c[k+p*hd:], n)
			case mmApplyGradW: // dW = dY v^T
				kernels.Gemm(false, true, t, t, n, y[p*hd:], n, x[v+p*hd:], n, 0, c[p*sq:], t)
			case mmApplyGradV: // dv = W^T dY
				kernels.Gemm(true, false, t, n, t, x[p*sq:], t, y[p*hd:], n, 0, c[v+p*hd:], n)
			}
		}
	})
}

func (d attnMMDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	sub := func(kind mmKind, x *gorgonia.Node) (*gorgonia.Node, error) {
		return apply(attnMMDef{kind, d.Heads}, x, dy)
	}
	switch d.kind {
	case mmScoresGrad, mmApplyGradW, mmApplyGradV:
		return nil, errors.New("no second derivative")
	case mmScores:
		dqkv, err := sub(mmScoresGrad, in[0]) // (3, B, H, T, D)
		return gorgonia.Nodes{dqkv}, err
	}
	dw, err := sub(mmApplyGradW, in[1]) // (B, H, T, T)
	if err != nil {
		return nil, err
	}
	dqkv, err := sub(mmApplyGradV, in[0]) // (3, B, H, T, D)
	return gorgonia.Nodes{dw, dqkv}, err
}
