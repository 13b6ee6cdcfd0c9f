package report

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/rundir"
)

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
