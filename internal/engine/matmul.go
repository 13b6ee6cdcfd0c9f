package engine

import (
	"gonum.org/v1/gonum/blas"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

var _ tensor.MatMuler = Engine{}

// MatMul is prealloc = a b for float32 matrices, a and b each contiguous or
// a transposed view of a contiguous matrix, through the BLAS Gorgonia uses
// (gorgonia.WhichBLAS), as tensor's StdEng calls it: the same product, less
// the checks and the boxed copy of a's data (Dense.Data) StdEng makes for
// each of BatchedMatMul's per-(batch, head) products. Anything else goes to
// StdEng.
func (e Engine) MatMul(a, b, prealloc tensor.Tensor) error {
	ad, okA := a.(*tensor.Dense)
	bd, okB := b.(*tensor.Dense)
	cd, okC := prealloc.(*tensor.Dense)
	if !okA || !okB || !okC || ad.Dtype() != tensor.Float32 || bd.Dtype() != tensor.Float32 || cd.Dtype() != tensor.Float32 {
		return e.StandardEngine.MatMul(a, b, prealloc)
	}
	tA, lda, okA := matrixOperand(ad)
	tB, ldb, okB := matrixOperand(bd)
	m, k, n := ad.Shape()[0], ad.Shape()[1], bd.Shape()[1]
	if !okA || !okB || bd.Shape()[0] != k || !cd.Shape().Eq(tensor.Shape{m, n}) || !contiguous(cd) {
		return e.StandardEngine.MatMul(a, b, prealloc)
	}
	gorgonia.WhichBLAS().Sgemm(tA, tB, m, n, k, 1, ad.Float32s(), lda, bd.Float32s(), ldb, 0, cd.Float32s(), n)
	return nil
}

// matrixOperand says how a BLAS reads d, a matrix with no axis of length 1
// in row-major order: as it is (strides (c, 1)) or transposed (a view of a
// contiguous (c, r) matrix: strides (1, r)), with its leading dimension.
func matrixOperand(d *tensor.Dense) (blas.Transpose, int, bool) {
	s, st := d.Shape(), d.Strides()
	if len(s) != 2 || len(st) != 2 || s[0] < 2 || s[1] < 2 || !d.IsNativelyAccessible() || !d.DataOrder().IsRowMajor() {
		return blas.NoTrans, 0, false
	}
	switch {
	case st[0] == s[1] && st[1] == 1:
		return blas.NoTrans, s[1], true
	case st[0] == 1 && st[1] == s[0]:
		return blas.Trans, s[0], true
	}
	return blas.NoTrans, 0, false
}
