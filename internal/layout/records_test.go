package layout

import (
	"os/exec"
	"strings"
	"testing"
)

// TestAnalysesReadNoRunConfig: package analysis depends on the records a
// run writes (runlog), not on the run's config: nothing it imports, at any
// depth, is rundir. What it needs of a run (the held-out set's size, the
// seed) its callers pass as values.
func TestAnalysesReadNoRunConfig(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"analysis").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list -deps named %d packages for analysis, too few: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == module+"rundir" {
			t.Errorf("analysis depends on rundir: an analysis takes the few values of a run it needs, not its config")
		}
	}
}
