package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestHostileFiles (issue 42, case 5): sample on every model whose files
// plant the payload in a place a message or the text shows
// (opentest.HostileModels) writes nothing a terminal acts on: its text
// keeps only newline and tab (escape.Text), stderr only newlines, and an
// error is one line holding no unsafe character. What the model writes is
// escaped as it is written, token by token.
func TestHostileFiles(t *testing.T) {
	for _, m := range opentest.HostileModels(t) {
		t.Run(m.Place, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run([]string{"-checkpoint", m.Model, "-tokens", "#0 #1 #2", "-n", "16"}, &stdout, &stderr)
			if m.Opens() != (err == nil) {
				t.Fatalf("opens %t, want %t: %v", err == nil, m.Opens(), err)
			}
			escapetest.Check(t, "stdout", stdout.Bytes(), "\n\t")
			escapetest.CheckRun(t, "sample", nil, stderr.Bytes(), err)
			out := stdout.String() + stderr.String()
			if err != nil {
				out += err.Error()
			}
			if !strings.Contains(out, `\x1b`) && !strings.Contains(out, `\u202e`) && !strings.Contains(out, `\u0085`) {
				t.Errorf("the output shows none of the planted characters escaped:\n%.2000s", out)
			}
		})
	}
}
