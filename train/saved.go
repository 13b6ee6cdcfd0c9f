package train

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/rundir"
)

// SavedConfig returns the config of the run in dir: the one inside its
// checkpoint, or its config.yaml if it was stopped before the first
// checkpoint.
//
// A run extended on resume (train.steps raised) records its new length in
// config.yaml before its first new step, so train.steps comes from
// config.yaml when it is larger than the checkpoint's; every other key must
// agree, else the checkpoint was copied in from another run (it would pair
// with the wrong metrics and optimizer state) and SavedConfig refuses it.
func SavedConfig(dir string) (rundir.Config, error) {
	ckpt := filepath.Join(dir, rundir.CheckpointFile)
	yml := filepath.Join(dir, rundir.ConfigFile)
	if _, err := os.Stat(ckpt); err != nil {
		if _, err := os.Stat(yml); err != nil {
			return rundir.Config{}, errors.Errorf("%s holds no run to resume (no %s or %s)", dir, rundir.CheckpointFile, rundir.ConfigFile)
		}
		return rundir.LoadConfig(yml, nil)
	}
	_, info, err := model.Load(ckpt)
	if err != nil {
		return rundir.Config{}, err
	}
	fromCkpt, err := rundir.ParseConfigJSON(ckpt, info.RunConfig)
	if err != nil {
		return rundir.Config{}, err
	}
	fromYAML, err := rundir.LoadConfig(yml, nil)
	if err != nil {
		return rundir.Config{}, err
	}
	if fromYAML.Train.Steps > fromCkpt.Train.Steps {
		fromCkpt.Train.Steps = fromYAML.Train.Steps
	}
	if diff := configDiff(fromYAML, fromCkpt, rundir.ConfigFile, "checkpoint"); diff != "" {
		return rundir.Config{}, errors.Errorf("%s does not belong to the run in %s: its config differs (%s)", ckpt, dir, diff)
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
	if diff := configDiff(saved, raised, "saved", "given"); diff != "" {
		return errors.Errorf("the config differs (%s); on resume only train.steps may change, and only upward", diff)
	}
	return nil
}

// configDiff lists the keys whose values differ between a and b, as
// "key: <nameA> X, <nameB> Y", or returns "" when the configs are equal.
func configDiff(a0, b0 rundir.Config, nameA, nameB string) string {
	a, b := flatten(a0), flatten(b0)
	var diffs []string
	for _, k := range sortedKeys(a, b) {
		if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s %v, %s %v", k, nameA, a[k], nameB, b[k]))
		}
	}
	return strings.Join(diffs, "; ")
}

// flatten maps dotted JSON keys of a config to their values.
func flatten(c rundir.Config) map[string]any {
	raw, _ := json.Marshal(c) // a rundir.Config always encodes
	var tree map[string]any
	_ = json.Unmarshal(raw, &tree)
	flat := map[string]any{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				if prefix != "" {
					k = prefix + "." + k
				}
				walk(k, x)
			}
			return
		}
		flat[prefix] = v
	}
	walk("", tree)
	return flat
}

func sortedKeys(maps ...map[string]any) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range maps {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}
