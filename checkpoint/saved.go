package checkpoint

import (
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/rundir"
)

// SavedConfig returns the config of the run in dir: the one inside its
// checkpoint (read from its header alone), or its config.yaml if it was
// stopped before the first checkpoint.
//
// A run extended on resume (train.steps raised) records its new length in
// config.yaml before its first new step, so train.steps comes from
// config.yaml when it is larger than the checkpoint's; every other key must
// agree, else the checkpoint was copied in from another run (it would pair
// with the wrong metrics and optimizer state) and SavedConfig refuses it.
// A run written before runs recorded their text file (task.file) gets the
// record of the file as it is now, from config.yaml's task.path.
func SavedConfig(dir string) (rundir.Config, error) {
	ckpt := filepath.Join(dir, rundir.CheckpointFile)
	yml := filepath.Join(dir, rundir.ConfigFile)
	if _, err := os.Stat(ckpt); err != nil {
		if _, err := os.Stat(yml); err != nil {
			return rundir.Config{}, errors.Errorf("%s holds no run to resume (no %s or %s)", dir, rundir.CheckpointFile, rundir.ConfigFile)
		}
		return rundir.LoadRunConfig(yml, nil)
	}
	fromCkpt, _, err := Peek(ckpt)
	if err != nil {
		return rundir.Config{}, err
	}
	fromYAML, err := rundir.LoadRunConfig(yml, nil)
	if err != nil {
		return rundir.Config{}, err
	}
	if fromYAML.Train.Steps > fromCkpt.Train.Steps {
		fromCkpt.Train.Steps = fromYAML.Train.Steps
	}
	if !fromCkpt.Task.File.Recorded() {
		fromCkpt.Task.File = fromYAML.Task.File
	}
	if diff := rundir.ConfigDiff(fromYAML, fromCkpt, rundir.ConfigFile, "checkpoint"); diff != "" {
		return rundir.Config{}, errors.Errorf("%s does not belong to the run in %s: its config differs (%s)", ckpt, dir, diff)
	}
	if err := fromCkpt.Validate(); err != nil {
		return rundir.Config{}, errors.Wrapf(err, "%s: run config", ckpt)
	}
	return fromCkpt, nil
}

// CheckResumeConfig says whether a run saved with config saved may be
// resumed with config given. They must be equal except that train.steps may
// be raised, to extend a run (finished or not). The learning rate of every
// step is the schedule's with the steps in force when the step runs: with
// schedule constant an extended run is bit-identical to one started with
// the larger train.steps; with schedule cosine the remaining decay is
// stretched to end at the new last step, so the rate steps up at the first
// new step. Every other key, the schedule's included (schedule,
// warmup_steps, min_lr, lr), stays fixed.
func CheckResumeConfig(saved, given rundir.Config) error {
	if given.Train.Steps < saved.Train.Steps {
		return errors.Errorf("train.steps = %d is below the saved %d: on resume train.steps may only be raised", given.Train.Steps, saved.Train.Steps)
	}
	raised := given
	raised.Train.Steps = saved.Train.Steps
	if diff := rundir.ConfigDiff(saved, raised, "saved", "given"); diff != "" {
		return errors.Errorf("the config differs (%s); on resume only train.steps may change, and only upward", diff)
	}
	return nil
}
