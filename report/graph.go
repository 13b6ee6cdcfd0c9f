package report

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/rundir"
)

// OpenGraph opens the checkpoint on an attention path ("": its own) and
// builds the graph Graph describes: with train, its run's training graph.
// A model trained elsewhere has no run, so no batch to build one of: that
// is refused before its weights are read, naming init_from, which trains
// one from it.
func OpenGraph(checkpoint, path string, train bool) (*model.Graph, error) {
	if kind := open.TrainedElsewhereKind(checkpoint); train && kind != "" {
		return nil, errors.Errorf("-training-graph: %s is %s, a model trained elsewhere with no run whose batch to build; fine-tune it with init_from in a run config (train -config FILE), then give -training-graph that run", checkpoint, kind)
	}
	op, err := open.Open(checkpoint, open.Options{})
	if err != nil {
		return nil, err
	}
	if err := op.UsePath(path); err != nil {
		return nil, err
	}
	if !train {
		return Graph(op.Model, nil, 0)
	}
	seqLen := op.Task.SeqLen()
	if op.Run.FineTunes() {
		seqLen = op.Run.Task.Length // its text's windows; op.Task is the pretrained model's view
	}
	return Graph(op.Model, op.Run, seqLen)
}

// Graph builds the graph inspect shows: the forward graph it runs (batch
// 1, the full context), or given a run's config the training graph of that
// run: its batch size, its task's sequence length seqLen (a fine-tuning
// run's windows are shorter than the model's context), gradients and
// dropout masks.
func Graph(m *model.Model, run *rundir.Config, seqLen int) (*model.Graph, error) {
	opts := model.BuildOptions{Batch: 1, SeqLen: m.Config.Context}
	if run != nil {
		batch := run.Train.BatchSize
		if batch < 1 {
			return nil, errors.Errorf("metadata config: train.batch_size %d, want >= 1", batch)
		}
		if seqLen < 1 || seqLen > m.Config.Context {
			return nil, errors.Errorf("metadata config: a task of %d positions, want 1 to the model's context of %d", seqLen, m.Config.Context)
		}
		if err := checkTrainGraph(m.Config, batch, seqLen); err != nil {
			return nil, err
		}
		opts.Batch, opts.SeqLen, opts.Train = batch, seqLen, true
	}
	return model.Build(m, opts)
}

// GraphView is g's op nodes as render shows them, under a line naming the
// checkpoint, the path, the batch and the length.
func GraphView(checkpoint string, g *model.Graph) (render.Graph, error) {
	s, err := g.Summary()
	if err != nil {
		return render.Graph{}, err
	}
	what := "forward graph"
	if g.Opts.Train {
		what = "training graph (forward, then the gradients Gorgonia derived)"
	}
	v := render.Graph{
		Heading: fmt.Sprintf("%s, %s path, batch %d, length %d: %s", checkpoint, s.Path, g.Opts.Batch, g.Opts.SeqLen, what),
		Inputs:  s.Inputs, BuiltinOps: s.BuiltinOps, ProjectOps: s.ProjectOps, Params: s.Params,
	}
	for _, row := range s.Rows {
		v.Nodes = append(v.Nodes, render.GraphNode{Name: row.Name, Op: row.Op, Shape: row.Shape, Params: row.Params, Builtin: row.Builtin})
	}
	return v, nil
}
