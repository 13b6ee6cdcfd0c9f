package main

import (
	"io"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
	"github.com/attnscope/attnscope/rundir"
)

// showGraph is -graph and -dot: the checkpoint's expression graph as a
// summary on stdout and as Gorgonia's DOT in a file.
func showGraph(o options, stdout io.Writer) error {
	if err := checkOutput("-dot", o.dot, o.r.Inputs()); err != nil {
		return err
	}
	g, err := report.OpenGraph(o.r.Checkpoint, o.r.Path, o.trainGraph)
	if err != nil {
		return err
	}
	if o.dot != "" {
		if err := rundir.WriteOutput(o.dot, o.r.Inputs(), func(w io.Writer) error {
			_, err := io.WriteString(w, g.G.ToDot())
			return err
		}); err != nil {
			return errors.Wrap(err, "-dot")
		}
	}
	if o.graph {
		v, err := report.GraphView(o.r.Checkpoint, g)
		if err != nil {
			return err
		}
		if err := render.WriteGraph(stdout, v, width(stdout)); err != nil {
			return err
		}
	}
	return wrote(stdout, o.dot)
}
