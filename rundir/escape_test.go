package rundir

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestRecordedValuesEscaped: what a run's config records comes from a file,
// so a hostile recorded digest or config value is shown escaped in the
// one-line refusal that names it (issue 42).
func TestRecordedValuesEscaped(t *testing.T) {
	found := FileRecord{Path: "/m/config.json", Size: 2, SHA256: strings.Repeat("b", 64)}
	for _, digest := range []string{escapetest.Payload, "\u202e" + strings.Repeat("a", 70)} {
		err := FileRecord{Path: "/m/config.json", Size: 1, SHA256: digest}.same(found)
		if msgtest.Refusal(t, "a recorded digest", err, "the file changed since the run started from it") {
			escapetest.Check(t, "the error", []byte(err.Error()), "")
		}
	}
	var a, b Config
	a.Task.Path, b.Task.Path = "text.txt", escapetest.Payload
	diff := ConfigDiff(a, b, "checkpoint", "run")
	if !strings.Contains(diff, "task.path") {
		t.Fatalf("the difference %q does not name task.path", diff)
	}
	escapetest.Check(t, "a config difference", []byte(diff), "")
}
