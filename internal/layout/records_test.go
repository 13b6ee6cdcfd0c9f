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

// TestReportOpensNoModelFile: package report reads an opened model
// (report.Subject) and depends, at any depth, on no reader of a model
// format: the caller opens the model.
func TestReportOpensNoModelFile(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"report").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list -deps named %d packages for report, too few: %q", len(deps), deps)
	}
	for _, d := range deps {
		switch d {
		case module + "open", module + "open/hf", module + "open/nanogpt", module + "checkpoint":
			t.Errorf("report depends on %s: it takes the opened model (report.Subject), and its caller opens it", strings.TrimPrefix(d, module))
		}
	}
}
