package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/raise"
)

// Block is one transformer block. With MLP == nil it is attention-only,
// x = x + attn(x) (the norms unused). Otherwise each sublayer f (the
// attention, then the MLP) adds to the stream through its norms, those
// that are not nil:
//
//	pre-norm (LN1, LN2):            x = x + f(ln(x))        GPT-2, Llama
//	sandwich (all four):            x = x + post(f(ln(x)))  Gemma 2 and 3
//	post-norm (LN1Post, LN2Post):   x = x + post(f(x))      OLMo 2
//
// With Parallel (pre-norm only) both sublayers read the block's input:
// x = x + (mlp(ln2(x)) + attn(ln1(x))), GPT-NeoX's parallel residual.
type Block struct {
	LN1      Norm
	Attn     *MultiHeadSelfAttention
	LN1Post  Norm
	LN2      Norm
	MLP      FeedForward
	LN2Post  Norm
	Parallel bool
	// Tap reads and may replace the block's attn_out (what the attention
	// adds to the stream, after its post norm), resid_mid (the stream
	// between the sublayers; none with Parallel) and mlp_out, each named
	// after the block ("blocks.0.attn_out"), or nil.
	Tap Tap
}

// Norm is a block's normalisation of each row of x (N, D), a LayerNorm or
// an RMSNorm.
type Norm interface {
	Width() int // D
	SetPath(p Path)
	Forward(x *gorgonia.Node) (*gorgonia.Node, error)
	forward(x *gorgonia.Node) *gorgonia.Node
}

// FeedForward is a block's MLP, (N, D) -> (N, D).
type FeedForward interface {
	Width() int // D
	SetPath(p Path)
	Forward(x *gorgonia.Node) (*gorgonia.Node, error)
	forward(x *gorgonia.Node) *gorgonia.Node
}

// BlockOutput is what a Block's Forward built: its output (B*T, D) and what
// its attention built.
type BlockOutput struct {
	Out  *gorgonia.Node
	Attn AttentionOutput
}

// NewBlock checks that a full block has both norms and its MLP of the
// attention's width: a pre-norm block. A nil mlp makes the block
// attention-only.
func NewBlock(ln1 Norm, attn *MultiHeadSelfAttention, ln2 Norm, mlp FeedForward) (*Block, error) {
	if attn == nil {
		return nil, errors.New("block: attention is required")
	}
	if mlp == nil {
		return &Block{Attn: attn}, nil
	}
	return NewFullBlock(&Block{LN1: ln1, Attn: attn, LN2: ln2, MLP: mlp})
}

// NewFullBlock checks a full block's parts: its attention and MLP, for
// each sublayer a norm before it, after it or both, every one of the
// attention's width, and Parallel only with the norms before.
func NewFullBlock(bl *Block) (*Block, error) {
	if bl.Attn == nil || bl.MLP == nil {
		return nil, errors.New("block: a full block needs its attention and its MLP")
	}
	d := bl.Attn.D
	for _, n := range []Norm{bl.LN1, bl.LN1Post, bl.LN2, bl.LN2Post} {
		if n != nil && n.Width() != d {
			return nil, errors.Errorf("block: a norm of width %d in a block of width %d", n.Width(), d)
		}
	}
	switch {
	case bl.MLP.Width() != d:
		return nil, errors.Errorf("block: mlp of width %d in a block of width %d", bl.MLP.Width(), d)
	case bl.LN1 == nil && bl.LN1Post == nil || bl.LN2 == nil && bl.LN2Post == nil:
		return nil, errors.Errorf("block: a full block needs ln1, ln2 or their post norms, of width %d", d)
	case bl.Parallel && (bl.LN1 == nil || bl.LN2 == nil || bl.LN1Post != nil || bl.LN2Post != nil):
		return nil, errors.New("block: a parallel residual needs ln1 and ln2 and no post norms")
	}
	return bl, nil
}

// Forward maps x (B*T, D) to the block's output (B*T, D); in goes to the
// attention (see AttentionInputs).
func (bl *Block) Forward(x *gorgonia.Node, in AttentionInputs) (built BlockOutput, err error) {
	defer raise.Catch(&err)
	var attn AttentionOutput
	out := bl.around(x, func(h *gorgonia.Node) *gorgonia.Node { // (B*T, D)
		attn = bl.Attn.forward(h, in)
		return attn.Out
	})
	return BlockOutput{out, attn}, nil
}

// around is the block around its attention, attend (the forward's or a
// decoding step's): x (rows, D) through both sublayers, their norms and
// the residual adds, as the Block's comment writes them.
func (bl *Block) around(x *gorgonia.Node, attend func(*gorgonia.Node) *gorgonia.Node) *gorgonia.Node {
	b := parentOf(bl.Attn.name())
	if bl.MLP == nil {
		return bl.residual(x, at(bl.Tap, b+".attn_out", attend(x)), "attn_residual") // (rows, D)
	}
	attn := at(bl.Tap, b+".attn_out", normed(bl.LN1Post, attend(normed(bl.LN1, x)))) // (rows, D)
	if bl.Parallel {
		mlp := at(bl.Tap, b+".mlp_out", bl.MLP.forward(bl.LN2.forward(x))) // (rows, D)
		both := node(b + ".parallel_sum")(bl.Attn.Path.Add(mlp, attn))     // (rows, D): GPT-NeoX's order
		return bl.residual(x, both, "mlp_residual")                        // (rows, D)
	}
	x = at(bl.Tap, b+".resid_mid", bl.residual(x, attn, "attn_residual"))                  // (rows, D)
	mlp := at(bl.Tap, b+".mlp_out", normed(bl.LN2Post, bl.MLP.forward(normed(bl.LN2, x)))) // (rows, D)
	return bl.residual(x, mlp, "mlp_residual")                                             // (rows, D)
}

// normed is n's forward of x, or x when there is no norm n.
func normed(n Norm, x *gorgonia.Node) *gorgonia.Node {
	if n == nil {
		return x
	}
	return n.forward(x)
}

// residual is x + y, on the attention's path, named after the block
// ("blocks.0.attn_residual").
func (bl *Block) residual(x, y *gorgonia.Node, what string) *gorgonia.Node {
	return node(parentOf(bl.Attn.name()) + "." + what)(bl.Attn.Path.Add(x, y))
}
