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
// nn.LayerNorm(D): y = (x - mean) / sqrt(var + eps) * w + b.
func LayerNorm(x, w, b *gorgonia.Node, eps float64) (*gorgonia.Node, error) {
	return apply(layerNormDef{eps: eps, stats: &rowStatsBuf{}}, x, w, b) // (N, D)
}

// lnPart is what a layerNormDef computes: the forward pass or one of its
// gradients, each from (x, w, third) with third b or dy.
type lnPart int

const (
	lnForward lnPart = iota // (x, w, b) -> y
	lnGradX                 // (x, w, dy) -> dx
	lnGradW                 // (x, w, dy) -> dw
)

type layerNormDef struct {
	part  lnPart
	eps   float64
	stats *rowStatsBuf // each row's mean and rstd, written by the forward, read by the gradients
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
	return fmt.Sprintf("%s{eps=%v}", [...]string{"LayerNorm", "LayerNormGradX", "LayerNormGradW"}[d.part], d.eps)
}

func (d layerNormDef) signature() signature {
	diff := d.part == lnForward
	third, out := 1, 2
	if !diff {
		third = 2 // dy
	}
	if d.part == lnGradW {
		out = 1
	}
	return signature{in: []input{floatIn(2, diff), floatIn(1, diff), floatIn(third, diff)}, out: out}
}

func (d layerNormDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	x, w, third := s[0], s[1], s[2]
	ok := w[0] == x[1]
	if d.part == lnForward {
		ok = ok && third.Eq(w)
	} else {
		ok = ok && third.Eq(x)
	}
	if !ok {
		return nil, errors.Errorf("%v: shapes %v, %v, %v do not fit (N, D), (D), %s", d, x, w, third, map[bool]string{true: "(D)", false: "(N, D)"}[d.part == lnForward])
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

// layerNorm runs one part over the rows (kernels.LayerNorm*Row), spread
// over the cores except for dw, a sum over rows into one (D) vector: in row
// order, on one core; the gradients take each row's statistics from the
// forward's.
func layerNorm[T float](d layerNormDef, a *args) {
	x, w, third, o := data[T](a, 0), data[T](a, 1), data[T](a, 2), out[T](a)
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
			if d.part == lnForward {
				mean, rstd := kernels.LayerNormStats(xr, d.eps)
				d.stats.mean[row], d.stats.rstd[row] = mean, rstd
				kernels.LayerNormRow(xr, w, third, mean, rstd, or)
				continue
			}
			kernels.LayerNormGradRow(xr, w, third[off:off+n], d.stats.mean[row], d.stats.rstd[row], or)
		}
	})
}

// grad: dx and dw from (x, w, dy), db = colsum(dy).
func (d layerNormDef) grad(in gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	if d.part != lnForward {
		return nil, errors.New("no second derivative")
	}
	dx, err := apply(layerNormDef{lnGradX, d.eps, d.stats}, in[0], in[1], dy) // (N, D)
	if err != nil {
		return nil, err
	}
	dw, err := apply(layerNormDef{lnGradW, d.eps, d.stats}, in[0], in[1], dy) // (D)
	if err != nil {
		return nil, err
	}
	db, err := apply(colSumDef{}, dy) // (D)
	return gorgonia.Nodes{dx, dw, db}, err
}
