package train

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// RolesSamples is how many held-out examples the head roles of every
// evaluation are pooled over: the first RolesSamples rows of the evaluation
// set (the same examples every time). Half inspect's default -samples keeps
// the scores within a few hundredths of inspect's at a cost that stays small
// next to the evaluation (BenchmarkEvaluation). rundir, which owns the
// file, owns the number.
const RolesSamples = rundir.RoleRows

// rolesProbe scores every head's roles on a fixed held-out sample with its
// own forward graph (batch RolesSamples), sharing the model's weights.
type rolesProbe struct {
	graph   *model.Graph
	vm      gorgonia.VM
	tokens  [][]int
	queries [][]float64 // nil entries: every row counts
	opts    heads.Options
}

func newRolesProbe(m *model.Model, task data.Task, size int, seed uint64) (*rolesProbe, error) {
	n := min(RolesSamples, size)
	set := data.EvalSet(task, n, seed) // the first n rows of the evaluation set
	var weights []string
	for l := range m.Config.Layers {
		weights = append(weights, model.AttnWeights(l))
	}
	g, err := model.Build(m, model.BuildOptions{Batch: n, SeqLen: task.SeqLen(), Cache: weights})
	if err != nil {
		return nil, errors.Wrap(err, "head roles graph")
	}
	if err := g.Feed(set.Tokens, set.Targets, set.Mask); err != nil {
		return nil, err
	}
	p := &rolesProbe{graph: g, vm: g.NewMachine(), opts: heads.Options{Separator: heads.NoSeparator, SkipEntropy: true}}
	if sep, ok := data.Separator(task); ok {
		p.opts.Separator = sep
	}
	for i := range n {
		tokens, _, mask := set.Row(i)
		if data.RolesOnEveryRow(task) {
			mask = nil
		}
		p.tokens, p.queries = append(p.tokens, tokens), append(p.queries, mask)
	}
	return p, nil
}

// run scores the heads of the model as it is now.
func (p *rolesProbe) run(step int) (rundir.RolesRecord, error) {
	defer p.vm.Reset()
	if err := p.vm.RunAll(); err != nil {
		return rundir.RolesRecord{}, errors.Wrap(err, "running the head roles graph")
	}
	cfg := p.graph.Model.Config
	att := make([][]float64, cfg.Layers)
	for l := range att {
		v, err := p.graph.Activation(model.AttnWeights(l))
		if err != nil {
			return rundir.RolesRecord{}, err
		}
		if att[l], err = model.Float64s(v); err != nil {
			return rundir.RolesRecord{}, err
		}
	}
	t := p.graph.Opts.SeqLen
	maps := func(l, b, h int) [][]float64 {
		block := att[l][(b*cfg.Heads+h)*t*t:][:t*t]
		rows := make([][]float64, t)
		for q := range rows {
			rows[q] = block[q*t : (q+1)*t]
		}
		return rows
	}
	results, err := heads.Pool(maps, cfg.Layers, cfg.Heads, p.tokens, p.queries, p.opts)
	if err != nil {
		return rundir.RolesRecord{}, err
	}
	rec := rundir.RolesRecord{Step: step, Heads: make([][]map[heads.Pattern]float64, len(results))}
	for l, layer := range results {
		for _, r := range layer {
			rec.Heads[l] = append(rec.Heads[l], r.Scores)
		}
	}
	return rec, nil
}
