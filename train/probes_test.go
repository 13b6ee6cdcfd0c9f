package train

import (
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// analysisProbes are the probes cmd/train wires: the tests' runs record
// what the command's do (roles.jsonl, circuits.jsonl).
func analysisProbes(m *model.Model, task data.Task, cfg rundir.Config) ([]Probe, error) {
	made, err := analysis.Probes(m, task, cfg.Train.EvalSize, cfg.Seed)
	out := make([]Probe, len(made))
	for i, p := range made {
		out[i] = p
	}
	return out, err
}
