package analysis

import (
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/runlog"
)

// Probe is what training records at every evaluation: the interface of
// train.Probe, which the command converts to (training imports no analysis).
type Probe interface {
	File() string
	Measure(step int) (runlog.Record, error)
	Close()
}

// Probes are the measurements a run records at every evaluation: each
// head's roles on the first runlog.RoleRows rows of the held-out set
// (roles.jsonl), and the induction papers' metrics (circuits.jsonl). They
// take the two settings of the run they read, its held-out set's size and
// its seed (as Ablate does), not the run's config: the caller passes them.
func Probes(m *model.Model, task data.Task, evalSize int, seed uint64) ([]Probe, error) {
	roles, err := newRolesProbe(m, task, evalSize, seed)
	if err != nil {
		return nil, err
	}
	return []Probe{roles, newCircuitsProbe(m, task, seed)}, nil
}

// rolesProbe scores every head's roles on a fixed held-out sample with its
// own forward graph (batch runlog.RoleRows), sharing the model's weights.
type rolesProbe struct {
	graph   *model.Graph
	vm      gorgonia.VM
	tokens  [][]int
	queries [][]float64 // nil entries: every row counts
	opts    heads.Options
}

func newRolesProbe(m *model.Model, task data.Task, size int, seed uint64) (*rolesProbe, error) {
	n := min(runlog.RoleRows, size)
	set := data.EvalSet(task, n, seed) // the first n rows of the evaluation set
	g, err := model.Build(m, model.BuildOptions{Batch: n, SeqLen: task.SeqLen(), Cache: Weights(m)})
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

// Measure scores the heads of the model as it is now.
func (p *rolesProbe) Measure(step int) (runlog.Record, error) {
	defer p.vm.Reset()
	if err := p.vm.RunAll(); err != nil {
		return runlog.RolesRecord{}, errors.Wrap(err, "running the head roles graph")
	}
	cfg := p.graph.Model.Config
	att := make([]Tensor, cfg.Layers) // (B, H, T, T) each, the machine's own values, read before its next run
	for l := range att {
		v, err := p.graph.Activation(model.AttnWeights(l))
		if err != nil {
			return runlog.RolesRecord{}, err
		}
		if att[l], err = tensorOf(v); err != nil {
			return runlog.RolesRecord{}, err
		}
	}
	maps := func(l, b, h int) [][]float64 { return att[l].Matrix(b, h) }
	results, err := heads.Pool(maps, cfg.Layers, cfg.Heads, p.tokens, p.queries, p.opts)
	if err != nil {
		return runlog.RolesRecord{}, err
	}
	rec := runlog.RolesRecord{Step: step, Heads: make([][]map[heads.Pattern]float64, len(results))}
	for l, layer := range results {
		for _, r := range layer {
			rec.Heads[l] = append(rec.Heads[l], r.Scores)
		}
	}
	return rec, nil
}

// circuitsProbe records the induction papers' metrics at each evaluation
// (circuits.jsonl): every head's prefix-matching score on runlog.RoleRows
// sequences of random tokens repeated twice, its copying score from the
// weights, and for an induction task the in-context-learning score on
// runlog.RoleRows of its examples; the sequences are drawn from the run's
// seed, the same at every evaluation.
type circuitsProbe struct {
	model *model.Model
	task  data.Task // the induction task, or nil: no ICL score
	seed  uint64
}

func newCircuitsProbe(m *model.Model, task data.Task, seed uint64) *circuitsProbe {
	p := &circuitsProbe{model: m, seed: seed}
	if task.Name() == "induction" {
		p.task = task
	}
	return p
}

// Measure measures the model as it is now.
func (p *circuitsProbe) Measure(step int) (runlog.Record, error) {
	rec := runlog.CircuitsRecord{Step: step}
	hs, err := Heads(p.model)
	if err != nil {
		return rec, err
	}
	if rec.Copying, err = CopyingEigen(p.model, hs); err != nil {
		return rec, err
	}
	if p.model.Config.Context >= 4 {
		if rec.PrefixMatching, err = PrefixMatching(p.model, runlog.RoleRows, p.seed, ProbeStream); err != nil {
			return rec, err
		}
	}
	if p.task != nil {
		b, err := Draw(p.task, runlog.RoleRows, p.seed, ProbeStream)
		if err != nil {
			return rec, err
		}
		c, err := RunWithCache(p.model, b)
		if err != nil {
			return rec, err
		}
		icl, err := ICL(c, p.task)
		if err != nil {
			return rec, err
		}
		rec.ICL = &icl.Score
	}
	return rec, nil
}

func (p *rolesProbe) File() string    { return runlog.RolesFile }
func (p *rolesProbe) Close()          { p.vm.Close() }
func (p *circuitsProbe) File() string { return runlog.CircuitsFile }
func (p *circuitsProbe) Close()       {}
