package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/raise"
)

// Block is one transformer block. With MLP == nil it is attention-only,
// x = x + attn(x) (LN1 and LN2 unused); otherwise it is pre-norm:
// x = x + attn(ln1(x)); x = x + mlp(ln2(x)).
type Block struct {
	LN1  Norm
	Attn *MultiHeadSelfAttention
	LN2  Norm
	MLP  FeedForward
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
// attention's width. A nil mlp makes the block attention-only.
func NewBlock(ln1 Norm, attn *MultiHeadSelfAttention, ln2 Norm, mlp FeedForward) (*Block, error) {
	if attn == nil {
		return nil, errors.New("block: attention is required")
	}
	if mlp == nil {
		return &Block{Attn: attn}, nil
	}
	if ln1 == nil || ln2 == nil || ln1.Width() != attn.D || ln2.Width() != attn.D || mlp.Width() != attn.D {
		return nil, errors.Errorf("block: a full block needs ln1, ln2 and an mlp of width %d", attn.D)
	}
	return &Block{LN1: ln1, Attn: attn, LN2: ln2, MLP: mlp}, nil
}

// Forward maps x (B*T, D) to the block's output (B*T, D); in goes to the
// attention (see AttentionInputs).
func (bl *Block) Forward(x *gorgonia.Node, in AttentionInputs) (built BlockOutput, err error) {
	defer raise.Catch(&err)
	if bl.MLP == nil {
		attn := bl.Attn.forward(x, in)                                           // (B*T, D)
		return BlockOutput{bl.residual(x, attn.Out, "attn_residual"), attn}, nil // (B*T, D)
	}
	attn := bl.Attn.forward(bl.LN1.forward(x), in)                     // (B*T, D)
	x = bl.residual(x, attn.Out, "attn_residual")                      // (B*T, D)
	mlp := bl.MLP.forward(bl.LN2.forward(x))                           // (B*T, D)
	return BlockOutput{bl.residual(x, mlp, "mlp_residual"), attn}, nil // (B*T, D)
}

// residual is x + y, on the attention's path, named after the block
// ("blocks.0.attn_residual").
func (bl *Block) residual(x, y *gorgonia.Node, what string) *gorgonia.Node {
	return node(parentOf(bl.Attn.name()) + "." + what)(bl.Attn.Path.Add(x, y))
}
