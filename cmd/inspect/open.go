package main

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/report"
)

// openOptions are what the flags name besides the model, for opening it.
func (o options) openOptions() open.Options {
	oo := open.Options{Data: o.data, Vocab: o.vocab, Notices: o.notices}
	if o.r.Text != "" {
		oo.TextFlag = "-text"
	}
	if p := o.r.Progress; p != nil {
		oo.Progress = func(done, total int64) { p("reading weights", done, total, report.BytesUnit) }
	}
	return oo
}

// inputs are the files the views read or may read, known before the model
// is opened: what no output may replace (safefile.CheckOutput).
func (o options) inputs() []string {
	in := open.Inputs(o.r.Checkpoint, o.openOptions())
	return append(append(in, o.r.Checkpoint), o.r.RunInputs()...)
}

// openModel opens the model the flags name, on the attention path -path
// names, as the report reads it.
func openModel(o options) (report.Subject, error) {
	op, err := open.Open(o.r.Checkpoint, o.openOptions())
	if err != nil {
		return report.Subject{}, err
	}
	if err := op.UsePath(o.path); err != nil {
		return report.Subject{}, err
	}
	return report.Subject{Model: op.Model, Run: op.Run, Step: op.Step, Task: op.Task, Origin: op.Origin,
		Tokenizer: op.Tokenizer, TokenNames: open.TokenNames(op), Inputs: op.Inputs}, nil
}

// openGraph opens the model and builds the graph report.Graph describes:
// with train, its run's training graph. A model trained elsewhere has no
// run, so no batch to build one of: that is refused before its weights are
// read, naming init_from, which trains one from it.
func openGraph(o options, train bool) (*model.Graph, error) {
	checkpoint := o.r.Checkpoint
	if kind := open.TrainedElsewhereKind(checkpoint); train && kind != "" {
		return nil, errors.Errorf("-training-graph: %s is %s, a model trained elsewhere with no run whose batch to build; fine-tune it with init_from in a run config (train -config FILE), then give -training-graph that run", checkpoint, kind)
	}
	op, err := open.Open(checkpoint, open.Options{NoText: true})
	if err != nil {
		return nil, err
	}
	if err := op.UsePath(o.path); err != nil {
		return nil, err
	}
	if !train {
		return report.Graph(op.Model, nil, 0)
	}
	seqLen := op.Task.SeqLen()
	if op.Run.FineTunes() {
		seqLen = op.Run.Task.Length // its text's windows; op.Task is the pretrained model's view
	}
	return report.Graph(op.Model, op.Run, seqLen)
}
