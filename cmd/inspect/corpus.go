package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/report"
)

// defaultCorpusWindows is -windows' default.
const defaultCorpusWindows = 100

// corpusFlags are the flags -corpus combines with; any other is refused.
var corpusFlags = []string{"checkpoint", "corpus", "windows", "window-length", "seed", "json", "path", "color", "data", "vocab"}

// checkCorpusFlags refuses -windows or -window-length without -corpus, a
// flag -corpus does not combine with, and counts out of range, before
// anything is read.
func checkCorpusFlags(fs *flag.FlagSet, o options) error {
	set := cli.Given(fs)
	for _, name := range []string{"windows", "window-length"} {
		if set[name] && o.corpus == "" {
			return errors.Errorf("-%s is used only with -corpus FILE (add -corpus, or drop -%s)", name, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		if !slices.Contains(corpusFlags, name) {
			return errors.Errorf("-corpus scores the heads over windows of a text and prints their statistics; it does not combine with -%s", name)
		}
	}
	switch {
	case o.windows < 1 || o.windows > report.MaxCorpusWindows:
		return errors.Errorf("-windows %d: must be in [1, %d]", o.windows, report.MaxCorpusWindows)
	case o.windowLength < 2:
		return errors.Errorf("-window-length %d: must be at least 2 (a head chooses among keys from the second position on)", o.windowLength)
	}
	return nil
}

// showCorpus scores every head over -windows windows of -corpus in the
// model's tokenizer and prints each statistic's mean and spread, as text
// or -json, the windows scored a phase of line (nil: none).
func showCorpus(o options, fs *flag.FlagSet, stdout io.Writer, line *progress.Line) error {
	if err := checkCorpusFlags(fs, o); err != nil {
		return err
	}
	if _, err := colorMode(o.color, stdout); err != nil {
		return err // the view has no colour, but -color is checked as the others' is
	}
	text, err := report.ReadCorpus(o.corpus)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.notices, "reading %s (%s)\n", msg.Clean(o.corpus), msg.Bytes(float64(len(text))))
	subject, err := openModel(o)
	if err != nil {
		return err
	}
	co := report.CorpusOptions{Checkpoint: o.r.Checkpoint, File: o.corpus, Text: text, Windows: o.windows, Seed: o.r.Seed}
	if cli.Given(fs)["window-length"] {
		co.Length = o.windowLength
	}
	if line != nil {
		co.Progress = func(done, total int) { line.Update("scoring heads over windows", int64(done), int64(total), "windows") }
	}
	doc, err := report.Corpus(subject, co)
	if err != nil {
		return err
	}
	if line != nil {
		line.Finish()
	}
	if o.json {
		return writeJSONLine(stdout, doc)
	}
	return render.WriteCorpus(stdout, doc.View(), width(stdout))
}
