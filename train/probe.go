package train

import (
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// Probe measures the model as it trains: at every evaluation it returns one
// line for a log of the run directory (the head roles, the circuit
// metrics). Training owns this interface and knows no analysis: the command
// wires the probes (Options.Probes), so a change to an analysis cannot break
// training.
type Probe interface {
	File() string                            // the run file its lines go to, a runlog log
	Measure(step int) (runlog.Record, error) // the line of the model as it is now
	Close()
}

// Probes makes a run's probes for its model (whose weights change in place
// as it trains), task and config; Run calls it when the run evaluates.
type Probes func(m *model.Model, task data.Task, cfg rundir.Config) ([]Probe, error)
