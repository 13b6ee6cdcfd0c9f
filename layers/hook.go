package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/raise"
)

// Hook is an intervention at one activation x of a graph: x becomes
// x*Mask + Fill, element by element, with Mask and Fill inputs of x's shape
// whose values the caller sets between runs (ones and zeros leave x as it
// is). Ablating a head and patching one in from another run are both a
// hook on the head outputs. It is Gorgonia's own HadamardProd and Add on
// both paths.
type Hook struct{ Mask, Fill *gorgonia.Node }

// Apply adds the hook to x, naming the result name.
func (h *Hook) Apply(name string, x *gorgonia.Node) (out *gorgonia.Node, err error) {
	defer raise.Catch(&err)
	h.check(x.Shape(), x.Name())
	kept := node(name + ".hook_masked")(gorgonia.HadamardProd(x, h.Mask)) // x's shape
	return node(name)(gorgonia.Add(kept, h.Fill)), nil                    // x's shape
}

// check raises an error naming the shapes when the hook's inputs do not
// have the shape of the activation it hooks (what).
func (h *Hook) check(shape tensor.Shape, what string) {
	for _, n := range []*gorgonia.Node{h.Mask, h.Fill} {
		if n == nil || !n.Shape().Eq(shape) {
			var got tensor.Shape
			if n != nil {
				got = n.Shape()
			}
			raise.If(errors.Errorf("hook on %s: mask or fill shape %v, want the activation's %v", what, got, shape))
		}
	}
}
