package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/internal/msg/msgtest"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestHostileFiles (issue 42, case 5): fine-tuning from each model whose
// files plant the payload in a place a message or a notice shows
// (opentest.HostileModels) writes nothing a terminal acts on. Each is
// refused (a model that opens, because its tokenizer cannot turn the text
// "Zz" into its tokens) in one line holding no unsafe character, the
// payload escaped in the error or in the notices before it (train shows no
// token's string), and no run directory is made.
func TestHostileFiles(t *testing.T) {
	text := filepath.Join(t.TempDir(), "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("Zz", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, m := range opentest.HostileModels(t) {
		t.Run(m.Place, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			stdout, stderr, err := runCmd("-config", writeConfig(t, fmt.Sprintf(fineTuneYAML, m.Model, text)), "-run", dir)
			msgtest.Refusal(t, m.Place, err)
			escapetest.CheckRun(t, "train", []byte(stdout), []byte(stderr), err)
			out := stdout + stderr
			if err != nil {
				out += err.Error()
			}
			if m.Shown != opentest.InViews && !strings.Contains(out, `\x1b`) && !strings.Contains(out, `\u202e`) && !strings.Contains(out, `\u0085`) {
				t.Errorf("the output shows none of the planted characters escaped:\n%.2000s", out)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("a refused run made %s (%v)", dir, err)
			}
		})
	}
}
