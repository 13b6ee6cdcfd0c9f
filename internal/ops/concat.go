package ops

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// ConcatColumns returns [a | b] for a (N, A) and b (N, B): gorgonia.Concat
// along axis 1 into a reused (N, A+B) buffer. Latent attention joins its
// queries and up-projected keys and values this way on the fused path. The
// gradient hands each input its columns of dy.
func ConcatColumns(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	sa, sb := a.Shape(), b.Shape()
	if len(sa) != 2 || len(sb) != 2 || sa[0] != sb[0] {
		return nil, errors.Errorf("concat columns: inputs %v and %v are not (N, A) and (N, B)", sa, sb)
	}
	return apply(concatDef{left: sa[1], right: sb[1]}, a, b) // (N, A+B)
}

// concatDef is ConcatColumns of widths left and right.
type concatDef struct{ left, right int }

func (d concatDef) String() string { return fmt.Sprintf("ConcatColumns{%d,%d}", d.left, d.right) }

func (d concatDef) signature() signature {
	return signature{in: []input{floatIn(2, true), floatIn(2, true)}, out: 2}
}

func (d concatDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if s[0][0] != s[1][0] || s[0][1] != d.left || s[1][1] != d.right {
		return nil, errors.Errorf("%v: inputs %v and %v", d, s[0], s[1])
	}
	return tensor.Shape{s[0][0], d.left + d.right}, nil
}

func (d concatDef) run(a *args) error { return byDtype(d, a, concatRows[float64], concatRows[float32]) }

func concatRows[T float](d concatDef, a *args) {
	x, y, out := data[T](a, 0), data[T](a, 1), out[T](a)
	w := d.left + d.right
	for r := 0; r < len(out)/w; r++ {
		copy(out[r*w:], x[r*d.left:(r+1)*d.left])
		copy(out[r*w+d.left:], y[r*d.right:(r+1)*d.right])
	}
}

func (d concatDef) grad(_ gorgonia.Nodes, _, dy *gorgonia.Node) (gorgonia.Nodes, error) {
	w := d.left + d.right
	da, err := apply(columnsDef{from: 0, to: d.left, width: w}, dy)
	if err != nil {
		return nil, err
	}
	db, err := apply(columnsDef{from: d.left, to: w, width: w}, dy)
	return gorgonia.Nodes{da, db}, err
}

// columnsDef selects columns [from, to) of a (N, width) matrix: the
// gradient of ConcatColumns.
type columnsDef struct{ from, to, width int }

func (d columnsDef) String() string {
	return fmt.Sprintf("Columns{%d:%d of %d}", d.from, d.to, d.width)
}

func (d columnsDef) signature() signature { return signature{in: []input{floatIn(2, false)}, out: 2} }

func (d columnsDef) shape(s []tensor.Shape) (tensor.Shape, error) {
	if s[0][1] != d.width {
		return nil, errors.Errorf("%v: input %v", d, s[0])
	}
	return tensor.Shape{s[0][0], d.to - d.from}, nil
}

func (d columnsDef) run(a *args) error { return byDtype(d, a, columns[float64], columns[float32]) }

func columns[T float](d columnsDef, a *args) {
	x, out := data[T](a, 0), out[T](a)
	w := d.to - d.from
	for r := 0; r < len(out)/w; r++ {
		copy(out[r*w:(r+1)*w], x[r*d.width+d.from:r*d.width+d.to])
	}
}
