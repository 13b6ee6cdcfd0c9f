package msgtest

import (
	"strings"
	"testing"
)

// MaxMessage is the longest message allowed: a message quotes at most about
// 80 characters of any one value (msg.MaxShown), so even one naming several
// long values stays far below it.
const MaxMessage = 600

// Refusal reports, under name, an error when err is nil, or when its message
// spans lines, is longer than MaxMessage bytes or lacks any of want. It
// returns whether err was non-nil, so a caller can go on to check what a
// refused command left behind.
func Refusal(t testing.TB, name string, err error, want ...string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one containing %q", name, want)
		return false
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") {
		t.Errorf("%s: message spans lines: %q", name, msg)
	}
	if len(msg) > MaxMessage {
		t.Errorf("%s: message of %d bytes: %.300s...", name, len(msg), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q does not contain %q", name, msg, w)
		}
	}
	return true
}
