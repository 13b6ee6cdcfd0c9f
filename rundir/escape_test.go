package rundir

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
)

// TestRecordedValuesEscaped: what a run's config records comes from a file,
// so a hostile config value is shown escaped in the difference that names
// it (issue 42; a hostile recorded digest: package initfrom's test).
func TestRecordedValuesEscaped(t *testing.T) {
	var a, b Config
	a.Task.Path, b.Task.Path = "text.txt", escapetest.Payload
	diff := ConfigDiff(a, b, "checkpoint", "run")
	if !strings.Contains(diff, "task.path") {
		t.Fatalf("the difference %q does not name task.path", diff)
	}
	escapetest.Check(t, "a config difference", []byte(diff), "")
}
