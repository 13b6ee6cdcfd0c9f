package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/raise"
)

// output is the attention's output (B*T, D) from the merged heads (B*T,
// H*d): the out projection. When the Tap wants each head's result (y,
// (B, H, T, d), through its slice of W_out: TransformerLens's hook_result)
// it is built beside it, and when the Tap hooks it the output adds what
// the hook changed, the sum over heads of (hooked - result): the output of
// the results the hook left, and bit for bit the out projection's where
// it left them as they were.
func (a *MultiHeadSelfAttention) output(p string, y, merged *gorgonia.Node) *gorgonia.Node {
	out := a.Out.forward(merged) // (B*T, D)
	if !wants(a.Tap, p+".result") {
		return out
	}
	result := a.result(p, y) // (H, B, T, D)
	hooked := at(a.Tap, p+".result", result)
	if hooked == result {
		return out
	}
	b, t, d := a.Batch, a.SeqLen, a.D
	change := node(p + ".result_change")(gorgonia.Sub(hooked, result))                     // (H, B, T, D)
	sum := node(p + ".result_change_sum")(gorgonia.Sum(change, 0))                         // (B, T, D)
	rows := node(p + ".result_change_rows")(gorgonia.Reshape(sum, tensor.Shape{b * t, d})) // (B*T, D)
	return node(p + ".result_out")(gorgonia.Add(out, rows))                                // (B*T, D)
}

// result is each head's output y (B, H, T, d) through its slice of W_out
// (D, H*d), without b_out: (H, B, T, D), one product per head.
func (a *MultiHeadSelfAttention) result(p string, y *gorgonia.Node) *gorgonia.Node {
	w := a.Out.Weight
	if a.Out.Stored != nil {
		w = a.ResultWeight
	}
	if w == nil || w.Graph() != y.Graph() {
		raise.If(errors.Errorf("attention %s: each head's result needs %s as a tensor of the graph, and it is kept in its file's dtype (set ResultWeight, or widen the model: Model.WidenStored)", p, a.Out.Weight.Name()))
	}
	b, t, h, dh, d := a.Batch, a.SeqLen, a.Heads, a.dHead(), a.D
	zh := node(p + ".result_z")(gorgonia.Transpose(y, 1, 0, 2, 3))                    // (H, B, T, d)
	z := node(p + ".result_z_rows")(gorgonia.Reshape(zh, tensor.Shape{h, b * t, dh})) // (H, B*T, d)
	w3 := node(p + ".result_w")(gorgonia.Reshape(w, tensor.Shape{d, h, dh}))          // (D, H, d)
	wh := node(p + ".result_w_heads")(gorgonia.Transpose(w3, 1, 0, 2))                // (H, D, d)
	flat := node(p + ".result_flat")(gorgonia.BatchedMatMul(z, wh, false, true))      // (H, B*T, D) = z W_O,h^T
	return node(p + ".result")(gorgonia.Reshape(flat, tensor.Shape{h, b, t, d}))      // (H, B, T, D)
}
