package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
)

// Graph is an expression graph's op nodes in execution order with their
// totals (inspect -graph), under a line naming what graph it is.
type Graph struct {
	Heading string // "runs/copy/checkpoint.safetensors, fused path, ..."
	Nodes   []GraphNode
	// Inputs counts the input nodes; BuiltinOps and ProjectOps the nodes
	// of Gorgonia's own ops and of the project's; Params the parameters.
	Inputs, BuiltinOps, ProjectOps, Params int
}

// GraphNode is one op node: its name, op, output shape and the parameters
// first read there.
type GraphNode struct {
	Name, Op string
	Shape    []int
	Params   int
	Builtin  bool // Gorgonia's own op; the project's are marked "*"
}

// WriteGraph prints the heading, one op node a line (number, name, op,
// output shape, parameters), then the totals. Lines fit width columns: a
// node name or op too long for its share is cut with "…" (the op keeps its
// "*" mark).
func WriteGraph(w io.Writer, g Graph, width int) error {
	if _, err := fmt.Fprintln(w, escape.Label(g.Heading)); err != nil {
		return errors.Wrap(err, "writing output")
	}
	nameW, opW := graphColumns(g.Nodes, width)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tnode\top\tshape\tparams")
	for i, n := range g.Nodes {
		mark := ""
		if !n.Builtin {
			mark = " *"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s%s\t%s\t%s\n", i+1, cutTo(escape.Label(n.Name), nameW), cutTo(escape.Label(n.Op), opW-len(mark)), mark, shapeText(n.Shape), paramText(n.Params))
	}
	if err := tw.Flush(); err != nil {
		return errors.Wrap(err, "writing output")
	}
	_, err := fmt.Fprintf(w, "op nodes: %d (Gorgonia's own %d, attnscope's %d, marked *); input nodes: %d; parameters: %s\n",
		len(g.Nodes), g.BuiltinOps, g.ProjectOps, g.Inputs, paramText(g.Params))
	return errors.Wrap(err, "writing output")
}

// graphColumns shares out what width leaves after the number, shape and
// params columns (and the gaps) between the node and op columns: each gets
// what it needs when both fit, else the room is split, at least 16 each.
func graphColumns(nodes []GraphNode, width int) (nameW, opW int) {
	var numW, shapeW, paramW, needName, needOp int
	for i, n := range nodes {
		numW = max(numW, len(fmt.Sprint(i+1)))
		shapeW = max(shapeW, len(shapeText(n.Shape)))
		paramW = max(paramW, len(paramText(n.Params)))
		needName = max(needName, utf8.RuneCountInString(escape.Label(n.Name)))
		needOp = max(needOp, utf8.RuneCountInString(escape.Label(n.Op))+2)
	}
	room := width - 1 - (numW + shapeW + max(paramW, len("params")) + 4*2)
	if needName+needOp <= room {
		return needName, needOp
	}
	nameW = max(16, min(needName, room-min(needOp, room/2)))
	return nameW, max(16, room-nameW)
}

// cutTo shortens s to n runes, ending in "…", when it is longer.
func cutTo(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 2 {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shapeText prints a shape as "(1, 16, 32)"; a scalar is "()".
func shapeText(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// paramText prints a count with thousands separators, "-" for none.
func paramText(n int) string {
	if n == 0 {
		return "-"
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
