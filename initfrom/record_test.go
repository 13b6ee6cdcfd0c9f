package initfrom

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestFileRecordCheck: a recorded file whose content changed, or that is
// gone, is named with what to do.
func TestFileRecordCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	if err := os.WriteFile(path, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := HashFile(path)
	if err != nil || rec.Size != 7 || rec.Check() != nil {
		t.Fatalf("record %+v: %v, check %v", rec, err, rec.Check())
	}
	if err := os.WriteFile(path, []byte("Weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	msgtest.Refusal(t, "changed", rec.Check(), "model.safetensors (in ", "the file changed since the run started from it (recorded 7 bytes", "restore it, or start a new run")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	msgtest.Refusal(t, "gone", rec.Check(), "model.safetensors (in ", "is gone", "restore it, or start a new run")
}

// TestRecordedValuesEscaped: what a run's config records comes from a file,
// so a hostile recorded digest is shown escaped in the one-line refusal
// that names it (issue 42).
func TestRecordedValuesEscaped(t *testing.T) {
	found := FileRecord{Path: "/m/config.json", Size: 2, SHA256: strings.Repeat("b", 64)}
	for _, digest := range []string{escapetest.Payload, "\u202e" + strings.Repeat("a", 70)} {
		err := FileRecord{Path: "/m/config.json", Size: 1, SHA256: digest}.same(found)
		if msgtest.Refusal(t, "a recorded digest", err, "the file changed since the run started from it") {
			escapetest.Check(t, "the error", []byte(err.Error()), "")
		}
	}
}
