package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// LayerNorm normalises each row of x (N, D) to zero mean and unit biased
// variance, then scales by w (D) and shifts by b (D), as PyTorch's
// nn.LayerNorm(D): y = (x - mean) / sqrt(var + eps) * w + b. A nil b is a
// LayerNorm without bias (nn.LayerNorm(D, bias=False)).
func LayerNorm(x, w, b *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	if b == nil {
		return apply(layerNormDef{kind: normNoBias, eps: eps, stats: &rowStatsBuf{}}, x, w) // (N, D)
	}
	return apply(layerNormDef{kind: normBiased, eps: eps, stats: &rowStatsBuf{}}, x, w, b) // (N, D)
}

// RMSNorm scales each row of x (N, D) by 1/sqrt(mean(x^2) + eps) and by
// w (D), as Llama's RMSNorm and PyTorch's nn.RMSNorm(D, eps):
// y = x / sqrt(mean(x^2) + eps) * w. It is LayerNorm's op with the mean
// held at 0 and no bias, on the same row kernels.
func RMSNorm(x, w *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return apply(layerNormDef{kind: normRMS, eps: eps, stats: &rowStatsBuf{}}, x, w) // (N, D)
}

// lnPart is what a layerNormDef computes: the forward pass or one of its
// gradients, each from (x, w, third) with third b (when the norm has one)
// or dy.
type lnPart int

const (
	lnForward lnPart = iota // (x, w[, b]) -> y
	lnGradX                 // (x, w, dy) -> dx
	lnGradW                 // (x, w, dy) -> dw
)

// normKind says which norm a layerNormDef is.
type normKind int

const (
	normBiased normKind = iota // LayerNorm with a bias
	normNoBias                 // LayerNorm without
	normRMS                    // RMSNorm: no centring, no bias
)

type layerNormDef struct {
	part  lnPart
	kind  normKind
	eps   float64
	stats *rowStatsBuf // each row's mean (0 for an RMSNorm) and rstd, written by the forward, read by the gradients
}

// rowStatsBuf holds the mean and 1/sqrt(var + eps) of each row of the last
// forward run. The gradient parts read them instead of recomputing them
// (twice over, for dx and dw: rowStats was 5% of an L4 training step); they
// run after the forward in the same run because their dy depends on its
// output.
type rowStatsBuf struct{ mean, rstd []float64 }

// resize makes room for rows rows.
func (s *rowStatsBuf) resize(rows int) {
	if cap(s.mean) < rows {
		s.mean, s.rstd = make([]float64, rows), make([]float64, rows)
	}
	s.mean, s.rstd = s.mean[:rows], s.rstd[:rows]
}

func (d layerNormDef) String() string {
	name := "LayerNorm"
	if d.kind == normRMS {
		name = "RMSNorm"
	}
	name += [...]string{"", "GradX", "GradW"}[d.part]
	if d.kind == normNoBias {
		return fmt.Sprintf("%s{eps=%v,bias=false}", name, d.eps)
	}
	return fmt.Sprintf("%s{eps=%v}", name, d.eps)
}

// biased reports whether the forward takes a bias b, its third input.
func (d layerNormDef) biased() bool { return d.kind == normBiased }

func (d layerNormDef) signature() signature {
	if d.part != lnForward {
		out := 2 // dx
		if d.part == lnGradW {
			out = 1
		}
		return signature{in: []input{floatIn(2, false), floatIn(1, false), floatIn(2, false)}, out: out}
	}
	in := []input{floatIn(2, true), floatIn(1, true)}
	if d.biased() {
		in = append(in, floatIn(1, true))
	}
	return signature{in: in, out: 2}
}

func (d layerNormDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	x, w := s[0], s[1]
	ok, want := w[0] == x[1], "(N, D), (D)"
	switch {
	case d.part != lnForward:
		ok, want = ok && s[2].Eq(x), want+", (N, D)"
	case d.biased():
		ok, want = ok && s[2].Eq(w), want+", (D)"
	}
	if !ok {
		return nil, errors.Errorf("%v: shapes %v do not fit %s", d, s, want)
	}
	if d.part == lnGradW {
		return w.Clone(), nil
	}
	return x.Clone(), nil
}

func (d layerNormDef) run(a *args) error {
	rows := a.in[0].Shape()[0]
	if d.part == lnForward {
		d.stats.resize(rows)
	} else if len(d.stats.mean) != rows {
		return errors.Errorf("%v: the forward pass kept statistics of %d rows, x has %d", d, len(d.stats.mean), rows)
	}
	return byDtype(d, a, layerNorm[float64], layerNorm[float32])
}

// layerNormCost is kernels.ParallelFor's work per element of a row loop
// (the forward's two statistics passes and its output pass; dx's two).
const layerNormCost = 4

// layerNorm runs one part over the rows (kernels.LayerNorm*Row, an
// RMSNorm's with mean 0), spread over the cores except for dw, a sum over
// rows into one (D) vector: in row order, on one core; the gradients take
// each row's statistics from the forward's.
func layerNorm[T float](d layerNormDef, a *args) {
	x, w, o := data[T](a, 0), data[T](a, 1), out[T](a)
	var third []T // b, nil without one, or dy
	if len(a.in) > 2 {
		third = data[T](a, 2)
	}
	n := len(w)
	if n == 0 {
		return
	}
	if d.part == lnGradW {
		clear(o)
		for row := range len(x) / n {
			off := row * n
			kernels.LayerNormGradWRow(x[off:off+n], third[off:off+n], d.stats.mean[row], d.stats.rstd[row], o)
		}
		return
	}
	kernels.ParallelFor(len(x)/n, float64(layerNormCost*n), func(lo, hi int) {
		for row := lo; row < hi; row++ {
			off := row * n
			xr, or := x[off:off+n], o[off:off+n]
			switch {
			case d.part == lnForward:
				lnForwardRow(d, row, xr, w, third, or)
			case d.kind == normRMS:
				kernels.RMSNormGradRow(xr, w, third[off:off+n], d.stats.rstd[row], or)
			default:
				kernels.LayerNormGradRow(xr, w, third[off:off+n], d.stats.mean[row], d.stats.rstd[row], or)
			}
		}
	})
}

// lnForwardRow normalises row number row, x, into y and keeps its
// statistics for the gradients; b is nil without a bias.
func lnForwardRow[T float](d layerNormDef, row int, x, w, b, y []T) {
	mean, rstd := 0.0, 0.0
	if d.kind == normRMS {
		rstd = kernels.RMSNormStats(x, d.eps)
	} else {
		mean, rstd = kernels.LayerNormStats(x, d.eps)
	}
	d.stats.mean[row], d.stats.rstd[row] = mean, rstd
	kernels.LayerNormRow(x, w, b, mean, rstd, y)
}

// grad: dx and dw from (x, w, dy), and with a bias db = colsum(dy).
func (d layerNormDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.part != lnForward {
		return nil, errors.New("no second derivative")
	}
	part := func(p lnPart) (*gorgonia.Node, error) {
		return apply(layerNormDef{part: p, kind: d.kind, eps: d.eps, stats: d.stats}, in[0], in[1], dy)
	}
	dx, err := part(lnGradX) // (N, D)
	if err != nil {
		return nil, err
	}
	dw, err := part(lnGradW) // (D)
	if err != nil || !d.biased() {
		return gorgonia.Nodes{dx, dw}, err
	}
	db, err := apply(colSumDef{}, dy) // (D)
	return gorgonia.Nodes{dx, dw, db}, err
}
