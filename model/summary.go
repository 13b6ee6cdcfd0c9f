package model

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/ops"
)

// SummaryRow is one op node of a graph summary, like a line of a Keras or
// torchinfo summary.
type SummaryRow struct {
	Name    string `json:"name"`    // the node's name ("blocks.0.attn.scores")
	Op      string `json:"op"`      // the op as Gorgonia prints it ("BatchedMatMul", "MaskedSoftmax{...}")
	Shape   []int  `json:"shape"`   // the output shape; [] for a scalar
	Params  int    `json:"params"`  // parameters this node is the first to read, in execution order
	Builtin bool   `json:"builtin"` // Gorgonia's own op, not one of this project's
}

// Summary is a graph's op nodes in execution order with totals.
type Summary struct {
	Path       string       `json:"path"` // the attention path the graph is written with
	Rows       []SummaryRow `json:"rows"`
	Inputs     int          `json:"inputs"`      // input nodes: parameters, ids, masks, constants
	OpNodes    int          `json:"op_nodes"`    // len(Rows)
	BuiltinOps int          `json:"builtin_ops"` // rows with Gorgonia's own ops
	ProjectOps int          `json:"project_ops"` // rows with this project's ops
	Params     int          `json:"params"`      // parameter entries, each tensor counted once
}

// Summary lists the graph's op nodes in the order a TapeMachine runs them
// (Gorgonia's topological sort, reversed, as its compiler does). On a Train
// graph the gradient nodes follow the forward ones.
func (gr *Graph) Summary() (Summary, error) {
	sorted, err := gorgonia.Sort(gr.G)
	if err != nil {
		return Summary{}, errors.Wrap(err, "summary: sorting the graph")
	}
	params := make(map[*gorgonia.Node]bool, len(gr.Params))
	for _, p := range gr.Params {
		params[p] = true
	}
	stored := map[*ops.Stored]bool{} // counted already
	s := Summary{Path: gr.Path.String()}
	for i := len(sorted) - 1; i >= 0; i-- {
		n := sorted[i]
		if n.Op() == nil {
			s.Inputs++
			continue
		}
		row := SummaryRow{Name: n.Name(), Op: n.Op().String(), Shape: append([]int{}, n.Shape()...), Builtin: isBuiltin(n.Op())}
		for children := gr.G.From(n.ID()); children.Next(); {
			c, ok := children.Node().(*gorgonia.Node)
			if ok && params[c] {
				row.Params += c.Shape().TotalSize()
				delete(params, c) // counted at its first reader only
			}
		}
		if w := ops.StoredOf(n.Op()); w != nil && !stored[w] { // a weight read in place, not a child
			row.Params += w.Rows * w.Cols
			stored[w] = true
		}
		if row.Builtin {
			s.BuiltinOps++
		} else {
			s.ProjectOps++
		}
		s.Params += row.Params
		s.Rows = append(s.Rows, row)
	}
	s.OpNodes = len(s.Rows)
	return s, nil
}

// nameGradients names the op nodes gorgonia.Grad added, which Gorgonia
// names only by their op and children ("A × Bᵀ(%3a, %d)"): a gradient node
// after what it is the gradient of, "grad(blocks.0.attn.qkv)" (the constant
// 1 Grad starts from is "grad(loss)"); a node that
// holds one contribution to a gradient Grad then sums (a parameter read
// twice, q, k and v sliced from one tensor) after that gradient,
// "grad(embed).part1". Names are for summaries, DOT files and error
// messages: op nodes hash on their op and children, never their name, so
// naming cannot merge or split nodes.
func nameGradients(g *gorgonia.ExprGraph) error {
	sorted, err := gorgonia.Sort(g) // every node before its children
	if err != nil {
		return errors.Wrap(err, "naming gradients: sorting the graph")
	}
	parts := map[string][]*gorgonia.Node{} // contributions to a gradient, last run first
	for _, n := range sorted {
		seed := len(n.DerivOf()) > 0 && g.From(n.ID()).Len() == 0 // the constant 1 Grad starts from, named "1"
		if n.Op() == nil || !unnamed(n) && !seed {
			continue
		}
		if of := n.DerivOf(); len(of) > 0 {
			names := make([]string, len(of))
			for i, o := range of {
				names[i] = o.Name()
			}
			gorgonia.WithName("grad(" + strings.Join(names, ", ") + ")")(n)
			continue
		}
		for parents := g.To(n.ID()); parents.Next(); {
			p, ok := parents.Node().(*gorgonia.Node)
			if !ok || !strings.HasPrefix(p.Name(), "grad(") {
				continue
			}
			whole := p.Name()
			if i := strings.LastIndex(whole, ").part"); i >= 0 {
				whole = whole[:i+1] // a part of a part is a part of the whole
			}
			parts[whole] = append(parts[whole], n)
			gorgonia.WithName(whole + ".part")(n) // so that the parts it sums find whole
			break
		}
	}
	for whole, nodes := range parts {
		for i, n := range nodes {
			gorgonia.WithName(fmt.Sprintf("%s.part%d", whole, len(nodes)-i))(n) // numbered in execution order
		}
	}
	return nil
}

// unnamed tells an op node that kept the name Gorgonia gives it, its op
// and its children's ids: "Reshape(1, 32)(%8)".
func unnamed(n *gorgonia.Node) bool {
	return strings.HasSuffix(n.Name(), ")") && strings.Contains(n.Name(), "(%")
}

// isBuiltin tells Gorgonia's own ops from this project's by the package the
// op's type is declared in.
func isBuiltin(op gorgonia.Op) bool {
	t := reflect.TypeOf(op)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return strings.HasPrefix(t.PkgPath(), "gorgonia.org/")
}
