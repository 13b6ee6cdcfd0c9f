package train

import (
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// circuitsProbe records the induction papers' metrics at each evaluation
// (circuits.jsonl): every head's prefix-matching score on RolesSamples
// sequences of random tokens repeated twice, its copying score from the
// weights, and for an induction task the in-context-learning score on
// RolesSamples of its examples; the sequences are drawn from the run's
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

// run measures the model as it is now.
func (p *circuitsProbe) run(step int) (rundir.CircuitsRecord, error) {
	rec := rundir.CircuitsRecord{Step: step}
	hs, err := analysis.Heads(p.model)
	if err != nil {
		return rec, err
	}
	if rec.Copying, err = analysis.CopyingEigen(p.model, hs); err != nil {
		return rec, err
	}
	if p.model.Config.Context >= 4 {
		if rec.PrefixMatching, err = analysis.PrefixMatching(p.model, RolesSamples, p.seed); err != nil {
			return rec, err
		}
	}
	if p.task != nil {
		b, err := analysis.Examples(p.task, RolesSamples, p.seed)
		if err != nil {
			return rec, err
		}
		c, err := analysis.RunWithCache(p.model, b)
		if err != nil {
			return rec, err
		}
		icl, err := analysis.ICL(c, p.task)
		if err != nil {
			return rec, err
		}
		rec.ICL = &icl.Score
	}
	return rec, nil
}
