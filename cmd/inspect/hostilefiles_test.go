package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/escape/escapetest"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestHostileFiles (issue 42, case 5): for every place a model's files
// name something a message or a view shows (opentest.HostileModels), each
// view of inspect writes nothing a terminal acts on: no unsafe character on
// stdout or stderr but their newlines, an error of one line holding none,
// and a -html page holding none but its layout. The payload shows escaped
// where it was planted; -json and the page's data decode back to the real
// characters.
func TestHostileFiles(t *testing.T) {
	plainEnv(t, "100")
	dir := t.TempDir()
	page, png := filepath.Join(dir, "page.html"), filepath.Join(dir, "heads.png")
	views := [][]string{nil, {"-summary"}, {"-circuits"}, {"-json"}, {"-html", page}, {"-png", png}}
	for _, m := range opentest.HostileModels(t) {
		for _, view := range views {
			flag := "" // the default view
			if view != nil {
				flag = view[0]
			}
			if !m.Opens() && flag != "" {
				continue // a refused model is refused before any view
			}
			t.Run(m.Place+" "+flag, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				err := run(append([]string{"-checkpoint", m.Model, "-color", "never", "-examples", "2"}, view...), &stdout, &stderr)
				if m.Opens() != (err == nil) {
					t.Fatalf("opens %t, want %t: %v", err == nil, m.Opens(), err)
				}
				escapetest.CheckRun(t, "inspect", stdout.Bytes(), stderr.Bytes(), err)
				if flag == "" {
					shown(t, stdout.String()+stderr.String()+errText(err))
				}
				switch flag {
				case "-json":
					checkLabels(t, m.Model, decode(t, stdout.Bytes()))
				case "-html":
					raw, err := os.ReadFile(page)
					if err != nil {
						t.Fatal(err)
					}
					escapetest.Check(t, page, raw, "\n\t")
					var data struct {
						Inspect jsonOut `json:"inspect"`
					}
					if err := json.Unmarshal(blob(t, raw), &data); err != nil {
						t.Fatal(err)
					}
					checkLabels(t, m.Model, data.Inspect)
				}
			})
		}
	}
}

// shown fails unless out shows the payload (or the hostile characters of a
// vocabulary) escaped: the row reached the path it is about.
func shown(t *testing.T, out string) {
	t.Helper()
	for _, escaped := range []string{`\x1b`, `\u202e`, `\u0085`} {
		if strings.Contains(out, escaped) {
			return
		}
	}
	t.Errorf("the output shows none of the planted characters escaped:\n%.2000s", out)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkLabels requires j's labels to be the model's own for its tokens, as
// encoding/json carries them (a byte that is not UTF-8 becomes U+FFFD):
// the escapes are for terminals, JSON keeps the real characters.
func checkLabels(t *testing.T, model string, j jsonOut) {
	t.Helper()
	op, err := open.Open(model, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Labels) != len(j.Tokens) || len(j.Tokens) == 0 {
		t.Fatalf("%d labels for %d tokens", len(j.Labels), len(j.Tokens))
	}
	for i, id := range j.Tokens {
		if want := strings.ToValidUTF8(op.Task.Label(id), "\ufffd"); j.Labels[i] != want {
			t.Errorf("label %d is %q, want the token's own %q", i, j.Labels[i], want)
		}
	}
}
