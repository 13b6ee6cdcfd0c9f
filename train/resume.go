package train

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
	"github.com/pkg/errors"
)

// lockRun makes this process the only writer of the run in dir until
// runner.close (or its death: the kernel drops the lock, so a killed run
// never blocks a resume).
func lockRun(dir string) (*rundir.Lock, error) {
	if err := rundir.CheckNoLinks(dir); err != nil {
		return nil, err
	}
	lock, err := rundir.Acquire(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.Errorf("%s holds no run to resume (no such directory)", dir)
	}
	return lock, err
}

// resume restores the run in r.dir at its checkpoint's step.
func (r *runner) resume() error {
	saved, err := checkpoint.SavedConfig(r.dir)
	if err != nil {
		return err
	}
	if err := checkpoint.CheckResumeConfig(saved, r.cfg); err != nil {
		return errors.Wrapf(err, "cannot resume %s", r.dir)
	}
	ckpt := filepath.Join(r.dir, rundir.CheckpointFile)
	if _, err := os.Stat(ckpt); err == nil {
		ck, err := checkpoint.Load(ckpt)
		if err != nil {
			return err
		}
		if ck.Step < 0 || ck.Step > r.cfg.Train.Steps {
			return errors.Errorf("%s is at step %d, outside this run's 1..%d", ckpt, ck.Step, r.cfg.Train.Steps)
		}
		if ck.Model.Dtype != modelDtype {
			return errors.Errorf("%s holds %v weights, runs train %v", ckpt, ck.Model.Dtype, modelDtype)
		}
		if err := r.recordText(ck.Config); err != nil {
			return err
		}
		r.model, r.start = ck.Model, ck.Step
	} else if r.model, err = r.initialModel(); err != nil {
		return err
	}
	r.saved = r.start
	r.state.Adam = r.newAdam()
	if r.start > 0 {
		if err := loadState(r.dir, r.start, &r.state, r.model, r.resumedMoments()); err != nil {
			return err
		}
	}
	// Both logs were written by a run of the saved length, which bounds them.
	logs := []struct {
		name  string
		limit int64
	}{
		{runlog.MetricsFile, runlog.MaxMetricsBytes(saved.Train.Steps, len(saved.Train.EvalLengths))},
		{runlog.RolesFile, runlog.MaxRolesBytes(saved.Train.Steps, saved.Model.Layers*saved.Model.Heads)},
		{runlog.CircuitsFile, runlog.MaxCircuitsBytes(saved.Train.Steps, saved.Model.Layers*saved.Model.Heads)},
	}
	for _, l := range logs {
		if err := runlog.TruncateLog(filepath.Join(r.dir, l.name), r.start, saved.Train.Steps, l.limit); err != nil {
			return err
		}
	}
	if r.cfg.Train.Steps != saved.Train.Steps {
		// The run is extended: config.yaml records the new length before any
		// step of it runs, so a run killed now resumes to the new length.
		yml, err := r.cfg.YAML()
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(r.dir, rundir.ConfigFile), yml); err != nil {
			return err
		}
		r.extendedTo = r.cfg.Train.Steps
	}
	// State files of later steps were written by a run killed before their
	// checkpoint, temporary files by one killed mid-write: neither is needed.
	if err := removeStates(r.dir, func(step int) bool { return step != r.start }); err != nil {
		return err
	}
	return removeTemporaries(r.dir)
}

// recordText makes a run whose checkpoint predates the record of its text
// file (ckpt) record it from now on, saying once that the content training
// read cannot be checked: config.yaml is rewritten with the record of the
// file as it is now, and so is every later checkpoint.
func (r *runner) recordText(ckpt rundir.Config) error {
	if ckpt.Task.Name != data.Text || ckpt.Task.File.Recorded() {
		return nil
	}
	f := r.cfg.Task.File
	if r.notices != nil {
		fmt.Fprintf(r.notices, "note: %s recorded no SHA-256 of its text file, so the content of %s cannot be checked against what training read; the run records it from now on (%d bytes, sha256 %.12s...)\n",
			r.dir, f.Path, f.Size, f.SHA256)
	}
	yml, err := r.cfg.YAML()
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(r.dir, rundir.ConfigFile), yml)
}
