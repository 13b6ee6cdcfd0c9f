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

// runViewFlags are the flags inspect -run DIR takes without a model.
var runViewFlags = map[string]bool{"run": true, "json": true, "png": true}

// showRun is inspect -run DIR: the run's loss and accuracy curves and each
// head's strongest role through training, or with several -run their
// curves together, as text, -json or -png.
func showRun(o options, fs *flag.FlagSet, stdout io.Writer) error {
	if err := refuseColour(fs); err != nil {
		return err
	}
	var other []string
	fs.Visit(func(f *flag.Flag) {
		if !runViewFlags[f.Name] {
			other = append(other, "-"+f.Name)
		}
	})
	if len(other) > 0 {
		return errors.Errorf("%s: needs a model (inspect MODEL, or -checkpoint MODEL; -run DIR alone shows the run and takes only -json and -png)", strings.Join(other, ", "))
	}
	dirs := o.r.Runs
	inputs := report.RunInputs(dirs)
	// One run's -png is refused before its logs are read, several runs'
	// once each is read.
	if len(dirs) == 1 {
		if err := report.CheckRunPath(dirs[0]); err != nil {
			return err
		}
		if err := checkOutput("-png", o.png, inputs); err != nil {
			return err
		}
	}
	runs, err := report.ReadRuns(dirs)
	if err != nil {
		return err
	}
	if err := checkOutput("-png", o.png, inputs); err != nil {
		return err
	}
	if o.png != "" {
		c := runs.Chart()
		img, _, err := render.Chart(c.Title, "step", c.X0, c.X1, c.Panels)
		if err != nil {
			return err
		}
		if err := safefile.WriteOutput(o.png, inputs, rundir.RefuseRunFile, encodePNG(img)); err != nil {
			return errors.Wrap(err, "-png")
		}
	}
	if o.json {
		return writeJSONLine(stdout, runs.JSON())
	}
	if err := render.WriteSparks(stdout, runs.Text(), width(stdout)); err != nil {
		return errors.Wrap(err, "writing output")
	}
	return wrote(stdout, o.png)
}

// refuseColour refuses -color for the run view, saying why: its curves
// are plain text, with no colour to set (-color colours a model's
// heatmaps).
func refuseColour(fs *flag.FlagSet) error {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "color" })
	if set {
		return errors.New("-color colours a model's heatmaps; the run view (-run DIR alone) draws its curves in plain text, with no colour to set, and takes only -json and -png")
	}
	return nil
}
