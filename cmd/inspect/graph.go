package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/rundir"
)

// graphOf builds the graph -graph and -dot show: the forward graph inspect
// runs (batch 1, the full context), or with -train the training graph of
// the checkpoint's run (its batch size, gradients and dropout masks).
func graphOf(m *model.Model, cfg rundir.Config, trainGraph bool) (*model.Graph, error) {
	opts := model.BuildOptions{Batch: 1, SeqLen: m.Config.Context}
	if trainGraph {
		batch := cfg.Train.BatchSize
		if batch < 1 {
			return nil, errors.Errorf("metadata config: train.batch_size %d, want >= 1", batch)
		}
		est := m.Config.EstimateBytes(batch, 0)
		if est > model.MaxMemory {
			return nil, errors.Errorf("-train: the training graph of batch %d needs an estimated %.1f GiB (limit %.1f GiB)",
				batch, est/(1<<30), float64(model.MaxMemory)/(1<<30))
		}
		opts.Batch, opts.Train = batch, true
	}
	return model.Build(m, opts)
}

// showGraph is -graph and -dot: the checkpoint's expression graph as a
// summary on stdout and as Gorgonia's DOT in a file.
func showGraph(o options, stdout io.Writer) error {
	if o.dot != "" {
		if err := rundir.CheckOutput(o.dot, o.inputs()); err != nil {
			return errors.Wrap(err, "-dot")
		}
	}
	op, err := open.Open(o.checkpoint, open.Options{})
	if err != nil {
		return err
	}
	m := op.Model
	if err := op.UsePath(o.path); err != nil {
		return err
	}
	g, err := graphOf(m, op.Config, o.trainGraph)
	if err != nil {
		return err
	}
	if o.dot != "" {
		if err := rundir.WriteOutput(o.dot, o.inputs(), func(w io.Writer) error {
			_, err := io.WriteString(w, g.G.ToDot())
			return err
		}); err != nil {
			return errors.Wrap(err, "-dot")
		}
	}
	if o.graph {
		s, err := g.Summary()
		if err != nil {
			return err
		}
		what := "forward graph"
		if o.trainGraph {
			what = "training graph (forward, then the gradients Gorgonia derived)"
		}
		if _, err := fmt.Fprintf(stdout, "%s, %s path, batch %d, length %d: %s\n",
			o.checkpoint, s.Path, g.Opts.Batch, g.Opts.SeqLen, what); err != nil {
			return errors.Wrap(err, "writing output")
		}
		if err := writeSummary(stdout, s, width(stdout)); err != nil {
			return err
		}
	}
	if o.dot != "" {
		_, err := fmt.Fprintf(stdout, "wrote %s\n", o.dot)
		return errors.Wrap(err, "writing output")
	}
	return nil
}

// writeSummary prints one op node a line in execution order (number, name,
// op, output shape, parameters first read there), then the totals. Lines
// fit width columns: a node name or op too long for its share is cut with
// "…" (the op keeps its "*" mark).
func writeSummary(w io.Writer, s model.Summary, width int) error {
	nameW, opW := graphColumns(s, width)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tnode\top\tshape\tparams")
	for i, r := range s.Rows {
		op, mark := r.Op, ""
		if !r.Builtin {
			mark = " *"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s%s\t%s\t%s\n", i+1, cut(r.Name, nameW), cut(op, opW-len(mark)), mark, shapeText(r.Shape), paramText(r.Params))
	}
	if err := tw.Flush(); err != nil {
		return errors.Wrap(err, "writing output")
	}
	_, err := fmt.Fprintf(w, "op nodes: %d (Gorgonia's own %d, attnscope's %d, marked *); input nodes: %d; parameters: %s\n",
		s.OpNodes, s.BuiltinOps, s.ProjectOps, s.Inputs, paramText(s.Params))
	return errors.Wrap(err, "writing output")
}

// graphColumns shares out what width leaves after the number, shape and
// params columns (and the gaps) between the node and op columns: each gets
// what it needs when both fit, else the room is split, at least 16 each.
func graphColumns(s model.Summary, width int) (nameW, opW int) {
	var numW, shapeW, paramW, needName, needOp int
	for i, r := range s.Rows {
		numW = max(numW, len(fmt.Sprint(i+1)))
		shapeW = max(shapeW, len(shapeText(r.Shape)))
		paramW = max(paramW, len(paramText(r.Params)))
		needName = max(needName, utf8.RuneCountInString(r.Name))
		needOp = max(needOp, utf8.RuneCountInString(r.Op)+2)
	}
	room := width - 1 - (numW + shapeW + max(paramW, len("params")) + 4*2)
	if needName+needOp <= room {
		return needName, needOp
	}
	nameW = max(16, min(needName, room-min(needOp, room/2)))
	return nameW, max(16, room-nameW)
}

// cut shortens s to n runes, ending in "…", when it is longer.
func cut(s string, n int) string {
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
