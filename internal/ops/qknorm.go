package ops

import (
	"fmt"
	"math"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// QKNorm is QK-norm (Qwen 3's q_norm and k_norm) on attention's fused
// projection qkv (N, (H+2G)*d), whose rows hold H query heads, then G key
// heads, then G value heads, d wide each (as SplitGroupedHeads and Decode
// read them; G = H without grouping). With wq and wk (d) each query head is
// normalised by an RMSNorm over its d channels with the weights wq, each
// key head with wk; with wq (H*d) and wk (G*d) (OLMo 2's scope) the whole
// query part of a row is one RMSNorm with wq and the whole key part one
// with wk. The value heads are copied:
//
//	y = x / sqrt(mean(x^2) + eps) * w
//
// It runs before the head split (and before Rotary), so one op serves
// every layout, and the decoding step's CacheAttention reads its output as
// it would the projection. Gradients: with r = 1/sqrt(
// mean(x^2) + eps) and g = dy * w per normalised span, dx = r g - r^3 x
// mean(g x); dw = the sum over rows and spans of dy x r; dx of a value
// head is dy.
func QKNorm(qkv, wq, wk *gorgonia.Node, heads, kvHeads int, eps float64) (*gorgonia.Node, error) {
	if heads <= 0 || kvHeads <= 0 || heads%kvHeads != 0 {
		return nil, errors.Errorf("qk norm: %d key/value heads for %d heads: want a divisor", kvHeads, heads)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, errors.Errorf("qk norm: eps %v must be finite and not negative", eps)
	}
	if qkv == nil || qkv.Dims() != 2 {
		return nil, errors.New("qk norm: qkv must be a matrix (N, (H+2G)*d)")
	}
	dh := qkv.Shape()[1] / (heads + 2*kvHeads)
	return apply(qkNormDef{H: heads, G: kvHeads, dh: dh, eps: eps}, qkv, wq, wk) // (N, (H+2G)*d)
}

// qkPart is what a qkNormDef computes.
type qkPart int

const (
	qkForward qkPart = iota // (qkv, wq, wk) -> y
	qkGradX                 // (qkv, wq, wk, dy) -> dx
	qkGradWQ                // (qkv, wq, wk, dy) -> dwq
	qkGradWK                // (qkv, wq, wk, dy) -> dwk
)

type qkNormDef struct {
	part qkPart
	H, G int
	dh   int // d, the head width
	eps  float64
}

func (d qkNormDef) String() string {
	return fmt.Sprintf("%s{H=%d,G=%d,d=%d,eps=%v}", [...]string{"QKNorm", "QKNormGradX", "QKNormGradWQ", "QKNormGradWK"}[d.part], d.H, d.G, d.dh, d.eps)
}

func (d qkNormDef) signature() signature {
	diff := d.part == qkForward
	in := []input{floatIn(2, diff), floatIn(1, diff), floatIn(1, diff)}
	out := 2
	if !diff {
		in = append(in, floatIn(2, false)) // dy
	}
	if d.part == qkGradWQ || d.part == qkGradWK {
		out = 1
	}
	return signature{in: in, out: out}
}

func (d qkNormDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	x, wq, wk := s[0], s[1], s[2]
	dh := d.dh
	perHead := wq[0] == dh && wk[0] == dh
	whole := wq[0] == d.H*dh && wk[0] == d.G*dh
	if x[1] != (d.H+2*d.G)*dh || !perHead && !whole || d.part != qkForward && !s[3].Eq(x) {
		return nil, errors.Errorf("%v: shapes %v do not fit qkv (N, (H+2G)*d), wq and wk (d) or (H*d) and (G*d)[, dy like qkv]", d, s)
	}
	if d.part == qkGradWQ {
		return wq.Clone(), nil
	}
	if d.part == qkGradWK {
		return wk.Clone(), nil
	}
	return x.Clone(), nil
}

func (d qkNormDef) run(a *args) error { return byDtype(d, a, qkNorm[float64], qkNorm[float32]) }

func (d qkNormDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.part != qkForward {
		return nil, errors.New("no second derivative")
	}
	grads := make(gorgonia.Nodes, 3)
	for i, part := range []qkPart{qkGradX, qkGradWQ, qkGradWK} {
		g, err := apply(qkNormDef{part: part, H: d.H, G: d.G, dh: d.dh, eps: d.eps}, in[0], in[1], in[2], dy)
		if err != nil {
			return nil, err
		}
		grads[i] = g
	}
	return grads, nil
}

// qkNormCost is kernels.ParallelFor's work per element of a row (the sum
// of squares and the output pass; the gradient's two).
const qkNormCost = 4

// qkNorm runs one part: the forward and dx row by row, spread over the
// cores; dw, a sum over rows into one vector, in row order on one core.
// A row's query part [0, H*d) is normalised in spans of len(wq), its key
// part [H*d, (H+G)*d) in spans of len(wk); its value part is copied.
func qkNorm[T float](d qkNormDef, a *args) {
	x, wq, wk, y := data[T](a, 0), data[T](a, 1), data[T](a, 2), out[T](a)
	var dy []T
	if d.part != qkForward {
		dy = data[T](a, 3)
	}
	qEnd, kEnd := d.H*d.dh, (d.H+d.G)*d.dh
	width := (d.H + 2*d.G) * d.dh
	rows := len(x) / width
	if d.part == qkGradWQ || d.part == qkGradWK {
		from, to, w := 0, qEnd, wq // the part whose weight it is
		if d.part == qkGradWK {
			from, to, w = qEnd, kEnd, wk
		}
		clear(y)
		for row := 0; row < len(x); row += width {
			for off := row + from; off < row+to; off += len(w) {
				xs := x[off:][:len(w)]
				kernels.LayerNormGradWRow(xs, dy[off:][:len(w)], 0, kernels.RMSNormStats(xs, d.eps), y)
			}
		}
		return
	}
	kernels.ParallelFor(rows, float64(qkNormCost*width), func(lo, hi int) {
		for row := lo * width; row < hi*width; row += width {
			for off := row; off < row+kEnd; {
				w := wq
				if off-row >= qEnd {
					w = wk
				}
				xs, ys := x[off:][:len(w)], y[off:][:len(w)]
				if d.part == qkForward {
					kernels.LayerNormRow(xs, w, nil, 0, kernels.RMSNormStats(xs, d.eps), ys)
				} else {
					kernels.RMSNormGradRow(xs, w, dy[off:][:len(w)], kernels.RMSNormStats(xs, d.eps), ys)
				}
				off += len(w)
			}
			if d.part == qkForward { // the value heads
				copy(y[row+kEnd:row+width], x[row+kEnd:row+width])
			} else {
				copy(y[row+kEnd:row+width], dy[row+kEnd:row+width])
			}
		}
	})
}
