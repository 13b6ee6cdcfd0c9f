package layers

import "gorgonia.org/gorgonia"

// Tap is how the builder of a graph reads, and may replace, what layers
// compute on the way: their activations. A layer with a Tap calls At at
// each of its activations with the node there, named after the layer
// ("blocks.0.attn.q", "blocks.0.ln1.scale", "blocks.0.mlp_out"), and goes
// on with the node At returns; At returns x itself to leave the graph as
// it is. Wants reports whether the graph asks for an activation that a
// plain forward of the fused path does not compute (the pre-softmax
// scores, q, k and v after rotary positions, each head's result, a norm's
// scale): the layer builds it only then, its norm or attention core
// written on the Gorgonia path (the same function, tests hold them
// equal). A nil Tap reads nothing.
type Tap interface {
	Wants(name string) bool
	At(name string, x *gorgonia.Node) *gorgonia.Node
}

// at is t.At(name, x), or x with no tap.
func at(t Tap, name string, x *gorgonia.Node) *gorgonia.Node {
	if t == nil {
		return x
	}
	return t.At(name, x)
}

// wants is t.Wants of any of names; false with no tap.
func wants(t Tap, names ...string) bool {
	if t == nil {
		return false
	}
	for _, n := range names {
		if t.Wants(n) {
			return true
		}
	}
	return false
}
