package train

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/runlog"
)

// TestFineTuneProbesOffByDefault: a model trained elsewhere is not probed
// unless train.probes says on: no roles or circuits log, no probe time, and
// the result says they were off; train.probes: off turns a lab run's off.
func TestFineTuneProbesOffByDefault(t *testing.T) {
	fx := pretrainedFixtures[0]
	dir := t.TempDir()
	pre, text := filepath.Join(dir, "pretrained"), filepath.Join(dir, "text.txt")
	if err := os.Mkdir(pre, 0o755); err != nil {
		t.Fatal(err)
	}
	fx.write(t, pre)
	writeText(t, text, fx.text(t))
	yml := strings.Replace(fmt.Sprintf(fineTuneYAML, pre, text), ", probes: on", "", 1)
	cfg := fineTuneConfig(t, yml, "train.steps=6", "train.checkpoint_every=6")
	run := filepath.Join(dir, "run")
	res := runOK(t, cfg, Options{Dir: run})
	probed(t, run, res, false)

	lab := filepath.Join(dir, "lab")
	probed(t, lab, runOK(t, parse(t, smallYAML, "train.steps=6", "train.probes=off"), Options{Dir: lab}), false)
	on := filepath.Join(dir, "on")
	probed(t, on, runOK(t, parse(t, smallYAML, "train.steps=6"), Options{Dir: on}), true)
}

// probed checks that the run in dir probed its model, or did not, by its
// logs and its result.
func probed(t *testing.T, dir string, res *Result, want bool) {
	t.Helper()
	for _, name := range []string{runlog.RolesFile, runlog.CircuitsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s: %s present %v, want %v", dir, name, err == nil, want)
		}
	}
	if res.ProbesOff == want || (res.RolesTime > 0) != want || res.LastEval == nil {
		t.Errorf("%s: ProbesOff %v, probe time %v, last eval %v; want probes %v", dir, res.ProbesOff, res.RolesTime, res.LastEval, want)
	}
}
