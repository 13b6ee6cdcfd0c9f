package layers

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
)

// Path says which ops a layer writes into the graph. Both paths compute the
// same function from the same weights (tests hold outputs and gradients
// equal), so a model may be trained on one and run on the other.
type Path string

const (
	// Fused writes internal/ops' ops: one node per layer (one GEMM for a
	// Linear, one permuting copy for the head split), each with a
	// hand-written gradient and reused output buffers. The zero Path is Fused.
	Fused Path = "fused"
	// Gorgonia writes Gorgonia's own ops (Mul, Reshape, Transpose, Slice,
	// BatchedMatMul, ByIndices, element-wise arithmetic) and lets Gorgonia
	// derive every gradient: the readable definition. Only the masked
	// softmax and the cross-entropy stay internal/ops' ops, because
	// Gorgonia's SoftMax and LogSoftMax are wrong along the last axis.
	Gorgonia Path = "gorgonia"
)

// Paths lists every path, in the order errors and help texts name them.
var Paths = []Path{Fused, Gorgonia}

// ParsePath reads a path name; the empty string is Fused (checkpoints
// written before paths existed).
func ParsePath(s string) (Path, error) {
	switch Path(s) {
	case "", Fused:
		return Fused, nil
	case Gorgonia:
		return Gorgonia, nil
	}
	return "", errors.Errorf("attention path %q: want %s or %s", s, Fused, Gorgonia)
}

// String returns the path's name, "fused" for the zero Path.
func (p Path) String() string {
	if p == "" {
		return string(Fused)
	}
	return string(p)
}

// Add is a + b (a residual connection, token plus position embedding):
// ops.Add on the fused path, gorgonia.Add on the Gorgonia path.
func (p Path) Add(a, b *gorgonia.Node) (*gorgonia.Node, error) {
	if p == Gorgonia {
		return gorgonia.Add(a, b)
	}
	return ops.Add(a, b)
}

// NameAs gives the node returned by a graph-building call a name that says
// what it is ("blocks.0.attn.scores"), for graph summaries, DOT files and
// error messages. The unnamed op nodes the call made on the way (the
// Reshape, SizeOf and Repeat behind a BroadcastAdd) are named after it:
// "blocks.0.attn.out.repeat". Op nodes hash on their op and children, never
// their name, so naming one cannot merge or split nodes.
func NameAs(name string) func(*gorgonia.Node, error) (*gorgonia.Node, error) {
	return func(n *gorgonia.Node, err error) (*gorgonia.Node, error) {
		if err != nil {
			return nil, errors.Wrap(err, name)
		}
		gorgonia.WithName(name)(n)
		nameHelpers(n, name, map[string]int{})
		return n, nil
	}
}

// node is NameAs for this package's builders: it names the node a
// graph-building call returned and returns it, or raises the call's error
// (wrapped with the name) for the exported Forward to return.
func node(name string) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node { return raise.Must(NameAs(name)(n, err)) }
}

// nameHelpers names n's unnamed op-node descendants (stopping at named
// nodes and inputs) name.<op kind>, numbered from the second of a kind.
func nameHelpers(n *gorgonia.Node, name string, seen map[string]int) {
	for children := n.Graph().From(n.ID()); children.Next(); {
		c, ok := children.Node().(*gorgonia.Node)
		if !ok || c.Op() == nil || c.Name() != defaultName(c) {
			continue
		}
		kind := strings.TrimSuffix(reflect.TypeOf(c.Op()).Name(), "Op")
		if reflect.TypeOf(c.Op()).Kind() == reflect.Pointer {
			kind = strings.TrimSuffix(reflect.TypeOf(c.Op()).Elem().Name(), "Op")
		}
		seen[kind]++
		if seen[kind] > 1 {
			kind += strconv.Itoa(seen[kind])
		}
		gorgonia.WithName(name + "." + kind)(c)
		nameHelpers(c, name, seen)
	}
}

// defaultName is the name Gorgonia prints for an op node nobody named:
// its op and its children's ids, "Reshape(1, 32)(%8)".
func defaultName(n *gorgonia.Node) string {
	var ids []string
	for children := n.Graph().From(n.ID()); children.Next(); {
		ids = append(ids, fmt.Sprintf("%%%x", children.Node().ID()))
	}
	return fmt.Sprintf("%s(%s)", n.Op(), strings.Join(ids, ", "))
}

// prefixOf is the layer name a parameter's checkpoint name implies:
// "blocks.0.attn.qkv.weight" -> "blocks.0.attn.qkv".
func prefixOf(param *gorgonia.Node) string {
	name := param.Name()
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// parentOf drops the last component of a dotted name:
// "blocks.0.attn.qkv" -> "blocks.0.attn"; a name without a dot is its own
// parent.
func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return name[:i]
	}
	return name
}

// scalar is a named scalar input of x's dtype holding v. Its name carries
// the value, so equal constants share one node (Gorgonia merges inputs by
// dtype, shape and name) and different ones never do.
func scalar(g *gorgonia.ExprGraph, dt tensor.Dtype, v float64) *gorgonia.Node {
	var val interface{} = v
	if dt == tensor.Float32 {
		val = float32(v)
	}
	return gorgonia.NewScalar(g, dt, gorgonia.WithName(fmt.Sprintf("const(%v)", val)), gorgonia.WithValue(val))
}

// constant is a named constant input of dtype dt holding v (row-major, of
// the given shape). Its name must say what v is: equal names share a node.
func constant(g *gorgonia.ExprGraph, dt tensor.Dtype, name string, v []float64, shape ...int) *gorgonia.Node {
	t := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	if dt == tensor.Float32 {
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		t = tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
	}
	return NewParam(g, name, t)
}

// SetPath puts the attention and all its projections on path p.
func (a *MultiHeadSelfAttention) SetPath(p Path) {
	a.Path, a.Out.Path = p, p
	if a.Latent != nil {
		a.Latent.Q.Path, a.Latent.Down.Path, a.Latent.Up.Path = p, p, p
		return
	}
	a.QKV.Path = p
}

// SetPath puts the LayerNorm on path p.
func (l *LayerNorm) SetPath(p Path) { l.Path = p }

// SetPath puts the MLP and both its projections on path p.
func (m *MLP) SetPath(p Path) { m.Path, m.FC.Path, m.Proj.Path = p, p, p }

// SetPath puts every layer of the block on path p.
func (bl *Block) SetPath(p Path) {
	bl.Attn.SetPath(p)
	if bl.MLP != nil {
		bl.MLP.SetPath(p)
	}
	for _, n := range []Norm{bl.LN1, bl.LN1Post, bl.LN2, bl.LN2Post} {
		if n != nil {
			n.SetPath(p)
		}
	}
}
