package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/strictyaml"
	"github.com/pkg/errors"
)

// RunTask is the task section of the config file of the run in dir, as
// written, without reading the file a text task names or checking any
// other section: what a reader of the run's checkpoint needs to find the
// run's text.
func RunTask(dir string) (data.TaskConfig, error) {
	cfg, path, err := decodeRunConfig(dir)
	if err != nil {
		return data.TaskConfig{}, err
	}
	return cfg.Task, errors.Wrap(cfg.Task.Validate(), path)
}

// CheckBelongs refuses a checkpoint's run config ckpt that is not the run's
// in dir: its config file (which a run without one does not have) must hold
// the same settings but train.steps, which an extended run raises, and the
// record of the text file, which a checkpoint written before the record
// lacks. The error names the differing keys.
func CheckBelongs(dir string, ckpt Config) error {
	run, path, err := decodeRunConfig(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := run.Resolve(); err != nil {
		return errors.Wrap(err, path)
	}
	ckpt.Train.Steps = run.Train.Steps
	if !ckpt.Task.File.Recorded() {
		ckpt.Task.File = run.Task.File
	}
	if diff := runDiff(run, ckpt); diff != "" {
		return errors.Errorf("%s differs from the checkpoint's config (%s)", path, diff)
	}
	return nil
}

// runDiff is ConfigDiff between a run's config file and a checkpoint's
// config.
func runDiff(run, ckpt Config) string { return ConfigDiff(run, ckpt, ConfigFile, "checkpoint") }

// decodeRunConfig decodes the config file of the run in dir as written:
// over DefaultConfig, with a text task's record (task.file, task.chars)
// read rather than refused, and nothing resolved or validated.
func decodeRunConfig(dir string) (Config, string, error) {
	path := filepath.Join(dir, ConfigFile)
	src, err := readConfig(path)
	if err != nil {
		return Config{}, path, err
	}
	cfg := DefaultConfig()
	err = strictyaml.Decoder{Fixed: modelSizeKeys}.File(&cfg, path, src)
	return cfg, path, err
}

// ConfigDiff lists the keys whose values differ between a and b, as
// "key: <nameA> X, <nameB> Y", the first three and how many more, or
// returns "" when the configs are equal.
func ConfigDiff(a0, b0 Config, nameA, nameB string) string {
	a, b := flatten(a0), flatten(b0)
	var diffs []string
	for _, k := range sortedKeys(a, b) {
		if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
			diffs = append(diffs, fmt.Sprintf("%s: %s %s, %s %s", k, nameA, msg.Clean(fmt.Sprint(a[k])), nameB, msg.Clean(fmt.Sprint(b[k]))))
		}
	}
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}

// flatten maps dotted JSON keys of a config to their values.
func flatten(c Config) map[string]any {
	raw, _ := json.Marshal(c) // a Config always encodes
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
