package layers

import (
	"fmt"
	"math"

	"github.com/chewxy/hm"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
)

// LayerNormEps is PyTorch's nn.LayerNorm default.
const LayerNormEps = 1e-5

// LayerNorm normalises each row of x (N, D) to zero mean and unit biased
// variance, then scales by Weight and shifts by Bias, as PyTorch's
// nn.LayerNorm(D): y = (x - mean) / sqrt(var + Eps) * Weight + Bias.
type LayerNorm struct {
	D      int
	Eps    float64
	Weight *gorgonia.Node // (D)
	Bias   *gorgonia.Node // (D)
	Path   Path           // which ops Forward writes; "" is Fused
}

// NewLayerNorm checks that weight and bias are vectors of the same length.
func NewLayerNorm(weight, bias *gorgonia.Node) (*LayerNorm, error) {
	if weight == nil || bias == nil || weight.Dims() != 1 || !weight.Shape().Eq(bias.Shape()) {
		return nil, errors.Errorf("layer norm: weight %v and bias %v must be equal-length vectors", nodeShape(weight), nodeShape(bias))
	}
	return &LayerNorm{D: weight.Shape()[0], Eps: LayerNormEps, Weight: weight, Bias: bias}, nil
}

// Forward normalises x (N, D) row by row.
func (l *LayerNorm) Forward(x *gorgonia.Node) (*gorgonia.Node, error) {
	if x.Dims() != 2 || x.Shape()[1] != l.D {
		return nil, errors.Errorf("layer norm %s: input shape %v, want (N, %d)", l.Weight.Name(), x.Shape(), l.D)
	}
	if l.Path == Gorgonia {
		return l.forwardGorgonia(x)
	}
	op := layerNormOp{opBase{fmt.Sprintf("LayerNorm{eps=%v}", l.Eps)}, l.Eps, newBuffer()}
	return NameAs(prefixOf(l.Weight))(gorgonia.ApplyOp(op, x, l.Weight, l.Bias)) // (N, D)
}

type layerNormOp struct {
	opBase
	eps float64
	out *buffer
}

func (op layerNormOp) Arity() int { return 3 }

func (op layerNormOp) Type() hm.Type {
	return hm.NewFnType(floatTensor(2), floatTensor(1), floatTensor(1), floatTensor(2))
}

func (op layerNormOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 3)
	if err != nil {
		return nil, err
	}
	return s[0].Clone(), nil
}

// lnArgs unpacks a (N, D) matrix followed by (D) vectors and equal-shaped
// matrices, as named by kinds ("m" matrix, "v" vector).
func lnArgs(inputs []gorgonia.Value, op, kinds string) ([]*tensor.Dense, error) {
	args := make([]*tensor.Dense, len(kinds))
	for i, k := range kinds {
		rank := 2
		if k == 'v' {
			rank = 1
		}
		a, err := denseArg(inputs, i, rank, op)
		if err != nil {
			return nil, err
		}
		want := args[0]
		switch {
		case i == 0:
		case rank == 1 && a.Shape()[0] != want.Shape()[1], rank == 2 && !a.Shape().Eq(want.Shape()):
			return nil, errors.Errorf("%s: input %d shape %v does not match x %v", op, i, a.Shape(), want.Shape())
		}
		args[i] = a
	}
	return args, sameDtype(op, args...)
}

func (op layerNormOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	args, err := lnArgs(inputs, "layer norm", "mvv")
	if err != nil {
		return nil, err
	}
	y := op.out.get(args[0].Dtype(), args[0].Shape()...)
	if y.Dtype() == tensor.Float64 {
		layerNorm[float64](args, y, op.eps)
	} else {
		layerNorm[float32](args, y, op.eps)
	}
	return y, nil
}

// rowStats returns the mean and 1/sqrt(var + eps) of one row, accumulated in
// float64 over four independent sums: one chain of dependent adds ran at a
// quarter of the adder's rate and was 7% of a sort training step.
func rowStats[T float](row []T, eps float64) (mean, rstd float64) {
	n := len(row) &^ 3
	var s0, s1, s2, s3 float64
	for j := 0; j < n; j += 4 {
		r := row[j : j+4 : j+4]
		s0 += float64(r[0])
		s1 += float64(r[1])
		s2 += float64(r[2])
		s3 += float64(r[3])
	}
	for _, v := range row[n:] {
		s0 += float64(v)
	}
	mean = (s0 + s1 + s2 + s3) / float64(len(row))
	s0, s1, s2, s3 = 0, 0, 0, 0
	for j := 0; j < n; j += 4 {
		r := row[j : j+4 : j+4]
		d0, d1, d2, d3 := float64(r[0])-mean, float64(r[1])-mean, float64(r[2])-mean, float64(r[3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for _, v := range row[n:] {
		d := float64(v) - mean
		s0 += d * d
	}
	return mean, 1 / math.Sqrt((s0+s1+s2+s3)/float64(len(row))+eps)
}

// layerNormCost is kernels.ParallelFor's work per element of a row loop (the two
// statistics passes and the output pass).
const layerNormCost = 4

// layerNorm normalises rows over the cores. x - mean is formed in float64:
// rounding the mean to float32 first shifts a row of mean 10 and spread 0.01
// by 1e-4 of its spread, which reached 1e-3 relative in dx.
func layerNorm[T float](args []*tensor.Dense, y *tensor.Dense, eps float64) {
	x, g, b, yd := args[0].Data().([]T), args[1].Data().([]T), args[2].Data().([]T), y.Data().([]T)
	d := len(g)
	kernels.ParallelFor(len(x)/d, float64(layerNormCost*d), func(lo, hi int) {
		for off := lo * d; off < hi*d; off += d {
			xr, yr := x[off:off+d], yd[off:off+d]
			mean, rstd := rowStats(xr, eps)
			for j, v := range xr {
				yr[j] = T((float64(v)-mean)*rstd*float64(g[j]) + float64(b[j]))
			}
		}
	})
}

func (op layerNormOp) DiffWRT(inputs int) []bool { return []bool{true, true, true} }

// SymDiff: with xhat = (x - mean) * rstd and g = dy * weight,
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dweight = colsum(dy * xhat);
// dbias = colsum(dy).
func (op layerNormOp) SymDiff(inputs gorgonia.Nodes, output, grad *gorgonia.Node) (gorgonia.Nodes, error) {
	x, w := inputs[0], inputs[1]
	dx, err := gorgonia.ApplyOp(layerNormGradOp{opBase{fmt.Sprintf("LayerNormGradX{eps=%v}", op.eps)}, op.eps, false, newBuffer()}, x, w, grad) // (N, D)
	if err != nil {
		return nil, errors.Wrap(err, "layer norm dx")
	}
	dw, err := gorgonia.ApplyOp(layerNormGradOp{opBase{fmt.Sprintf("LayerNormGradW{eps=%v}", op.eps)}, op.eps, true, newBuffer()}, x, w, grad) // (D)
	if err != nil {
		return nil, errors.Wrap(err, "layer norm dweight")
	}
	db, err := gorgonia.ApplyOp(newColSumOp(), grad) // (D)
	if err != nil {
		return nil, errors.Wrap(err, "layer norm dbias")
	}
	return gorgonia.Nodes{dx, dw, db}, nil
}

// layerNormGradOp maps (x, weight, dy) to dx, or to dweight when weightGrad.
type layerNormGradOp struct {
	opBase
	eps        float64
	weightGrad bool
	out        *buffer
}

func (op layerNormGradOp) Arity() int { return 3 }

func (op layerNormGradOp) Type() hm.Type {
	if op.weightGrad {
		return hm.NewFnType(floatTensor(2), floatTensor(1), floatTensor(2), floatTensor(1))
	}
	return hm.NewFnType(floatTensor(2), floatTensor(1), floatTensor(2), floatTensor(2))
}

func (op layerNormGradOp) InferShape(ds ...gorgonia.DimSizer) (tensor.Shape, error) {
	s, err := shapes(ds, 3)
	if err != nil {
		return nil, err
	}
	if op.weightGrad {
		return s[1].Clone(), nil
	}
	return s[0].Clone(), nil
}

func (op layerNormGradOp) Do(inputs ...gorgonia.Value) (gorgonia.Value, error) {
	args, err := lnArgs(inputs, "layer norm gradient", "mvm")
	if err != nil {
		return nil, err
	}
	var out *tensor.Dense
	if op.weightGrad { // accumulated over rows: start from 0
		out = op.out.zeroed(args[0].Dtype(), args[1].Shape()...)
	} else {
		out = op.out.get(args[0].Dtype(), args[0].Shape()...)
	}
	if out.Dtype() == tensor.Float64 {
		layerNormGrad[float64](args, out, op.eps, op.weightGrad)
	} else {
		layerNormGrad[float32](args, out, op.eps, op.weightGrad)
	}
	return out, nil
}

func layerNormGrad[T float](args []*tensor.Dense, out *tensor.Dense, eps float64, weightGrad bool) {
	x, w, dy, o := args[0].Data().([]T), args[1].Data().([]T), args[2].Data().([]T), out.Data().([]T)
	d := len(w)
	if weightGrad { // a sum over rows into one (D) vector: in row order, on one core
		for off := 0; off < len(x); off += d {
			xr, dyr := x[off:off+d], dy[off:off+d]
			mean, rstd := rowStats(xr, eps)
			for j, v := range xr {
				o[j] += T(float64(dyr[j]) * (float64(v) - mean) * rstd)
			}
		}
		return
	}
	kernels.ParallelFor(len(x)/d, float64(layerNormCost*d), func(lo, hi int) {
		for off := lo * d; off < hi*d; off += d {
			xr, dyr, or := x[off:off+d], dy[off:off+d], o[off:off+d]
			mean, rstd := rowStats(xr, eps)
			var m1, m2 float64
			for j, v := range xr {
				g := float64(dyr[j]) * float64(w[j])
				m1 += g
				m2 += g * (float64(v) - mean) * rstd
			}
			m1 /= float64(d)
			m2 /= float64(d)
			for j, v := range xr {
				g := float64(dyr[j]) * float64(w[j])
				or[j] = T(rstd * (g - m1 - (float64(v)-mean)*rstd*m2))
			}
		}
	})
}
