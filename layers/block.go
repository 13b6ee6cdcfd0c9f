package layers

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
)

// Block is one transformer block. With MLP == nil it is attention-only,
// x = x + attn(x) (LN1 and LN2 unused); otherwise it is pre-LN:
// x = x + attn(ln1(x)); x = x + mlp(ln2(x)).
type Block struct {
	LN1  *LayerNorm
	Attn *MultiHeadSelfAttention
	LN2  *LayerNorm
	MLP  *MLP
}

// NewBlock checks that a full block has both LayerNorms of the right width.
func NewBlock(ln1 *LayerNorm, attn *MultiHeadSelfAttention, ln2 *LayerNorm, mlp *MLP) (*Block, error) {
	if attn == nil {
		return nil, errors.New("block: attention is required")
	}
	if mlp != nil {
		if ln1 == nil || ln2 == nil || ln1.D != attn.D || ln2.D != attn.D || mlp.FC.In != attn.D {
			return nil, errors.Errorf("block: a full block needs ln1, ln2 and an mlp of width %d", attn.D)
		}
	}
	return &Block{LN1: ln1, Attn: attn, LN2: ln2, MLP: mlp}, nil
}

// Forward maps x (B*T, D) to (B*T, D) and returns the attention weights
// (B, H, T, T); keyMask and dropMask are passed to the attention.
func (bl *Block) Forward(x, keyMask, dropMask *gorgonia.Node) (out, weights *gorgonia.Node, err error) {
	h := x
	if bl.MLP != nil {
		if h, err = bl.LN1.Forward(x); err != nil { // (B*T, D)
			return nil, nil, err
		}
	}
	a, weights, err := bl.Attn.Forward(h, keyMask, dropMask) // (B*T, D), (B, H, T, T)
	if err != nil {
		return nil, nil, err
	}
	if x, err = bl.residual(x, a, "attn_residual"); err != nil { // (B*T, D)
		return nil, nil, errors.Wrap(err, "block: attention residual")
	}
	if bl.MLP == nil {
		return x, weights, nil
	}
	if h, err = bl.LN2.Forward(x); err != nil { // (B*T, D)
		return nil, nil, err
	}
	if h, err = bl.MLP.Forward(h); err != nil { // (B*T, D)
		return nil, nil, err
	}
	if x, err = bl.residual(x, h, "mlp_residual"); err != nil { // (B*T, D)
		return nil, nil, errors.Wrap(err, "block: mlp residual")
	}
	return x, weights, nil
}

// residual is x + y, on the attention's path, named after the block
// ("blocks.0.attn_residual").
func (bl *Block) residual(x, y *gorgonia.Node, what string) (*gorgonia.Node, error) {
	return NameAs(parentOf(bl.Attn.name()) + "." + what)(bl.Attn.Path.Add(x, y))
}
