package main

import (
	"flag"
	"io"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
	"github.com/attnscope/attnscope/rundir"
)

// graphFlags are the flags -graph and -dot take ("train" is
// -training-graph's old name); any other would be ignored.
var graphFlags = map[string]bool{"checkpoint": true, "graph": true, "dot": true, "training-graph": true, "train": true, "path": true}

// showGraph is -graph and -dot: the checkpoint's expression graph as a
// summary on stdout and as Gorgonia's DOT in a file.
func showGraph(o options, fs *flag.FlagSet, stdout io.Writer) error {
	var other []string
	fs.Visit(func(f *flag.Flag) {
		if !graphFlags[f.Name] {
			other = append(other, "-"+f.Name)
		}
	})
	if len(other) > 0 {
		return errors.Errorf("%s: -graph and -dot show the model's expression graph and take only -training-graph and -path (drop the others, or -graph and -dot to see the heads)", strings.Join(other, ", "))
	}
	if err := checkOutput("-dot", o.dot, o.inputs()); err != nil {
		return err
	}
	g, err := openGraph(o, o.trainGraph)
	if err != nil {
		return err
	}
	if o.dot != "" {
		if err := safefile.WriteOutput(o.dot, o.inputs(), rundir.RefuseRunFile, func(w io.Writer) error {
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
