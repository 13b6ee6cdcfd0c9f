package data

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
)

// TestRecordedDigestEscaped: the SHA-256 a run recorded of its text comes
// from a file (the run's config, the checkpoint's metadata); a hostile one
// is shown escaped in the one-line refusal of a changed file (issue 42).
func TestRecordedDigestEscaped(t *testing.T) {
	for _, digest := range []string{escapetest.Payload, "\u202e" + strings.Repeat("a", 70)} {
		err := checkRecord(`task.path = "text.txt"`, TextFile{Path: "/text.txt", Size: 1, SHA256: digest}, 2, strings.Repeat("b", 64))
		if msgtest.Refusal(t, "a recorded digest", err, "the file's content differs") {
			escapetest.Check(t, "the error", []byte(err.Error()), "")
		}
	}
}
