package train

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// readJSONL reads a log of the run directory, one T per line, in order;
// with T = map[string]any, what the file holds key by key, whatever the
// reader makes of it.
func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec T
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// snakeCase is the one style of every key in a run's JSON files.
var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// badKeys lists the keys of v, at any depth, that are not snake_case.
func badKeys(v any) []string {
	var bad []string
	switch v := v.(type) {
	case map[string]any:
		for k, inner := range v {
			if !snakeCase.MatchString(k) {
				bad = append(bad, k)
			}
			bad = append(bad, badKeys(inner)...)
		}
	case []any:
		for _, inner := range v {
			bad = append(bad, badKeys(inner)...)
		}
	}
	return bad
}

// TestLogKeysSnakeCase: every key of every line a fresh run writes to
// metrics.jsonl, roles.jsonl and circuits.jsonl, at any depth, is
// snake_case: the names of things (roles, heads) are values, never keys.
// The run writes every optional key (eval_length, gen_*, the ICL score).
func TestLogKeysSnakeCase(t *testing.T) {
	cfg := parse(t, `
seed: 3
task: {name: induction, length: 6, symbols: 8}
model: {d_model: 8, heads: 2, layers: 2, position: rope}
train: {batch_size: 4, steps: 2, log_every: 1, eval_every: 1, eval_size: 8, checkpoint_every: 0,
        eval_lengths: [8], eval_generate: true}
`)
	dir := filepath.Join(t.TempDir(), "run")
	runOK(t, cfg, Options{Dir: dir})
	for _, c := range []struct {
		file string
		keys []string // keys some line must have, so that the file's shape is the one checked
	}{
		{runlog.MetricsFile, []string{"loss", "eval_loss", "eval_length", "gen_seq_acc"}},
		{runlog.RolesFile, []string{"roles", "heads"}},
		{runlog.CircuitsFile, []string{"heads", "icl"}},
	} {
		lines := readJSONL[map[string]any](t, filepath.Join(dir, c.file))
		seen := map[string]bool{}
		for i, line := range lines {
			if bad := badKeys(line); len(bad) > 0 {
				t.Errorf("%s line %d: keys %q are not snake_case", c.file, i+1, bad)
			}
			for k := range line {
				seen[k] = true
			}
		}
		for _, k := range c.keys {
			if !seen[k] {
				t.Errorf("%s: no line has %q (%d lines)", c.file, k, len(lines))
			}
		}
	}
}

// checkLanguageFigure checks that an evaluation line gives the figure name
// (bits_per_char or perplexity) equal to want, and not the other one.
func checkLanguageFigure(t *testing.T, line map[string]any, name string, want float64) {
	t.Helper()
	other := map[string]string{"bits_per_char": "perplexity", "perplexity": "bits_per_char"}[name]
	got, ok := line[name].(float64)
	if _, both := line[other]; !ok || both || math.Abs(got-want) > 1e-12*want {
		t.Errorf("evaluation line %v: want %s %v and no %s", line, name, want, other)
	}
}

// TestTextFigures: a character-level text's evaluation lines carry its
// loss in bits per character; a toy task's carry no language figure.
func TestTextFigures(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	writeText(t, text, textLines)
	cases := []struct {
		name string
		cfg  rundir.Config
	}{
		{"text", textRunConfig(t, text, "2", "train.eval_every=1", "train.eval_size=8")},
		{"copy", parse(t, "task: {name: copy, length: 3, symbols: 4}\nmodel: {d_model: 8, heads: 2, layers: 1}\n"+
			"train: {batch_size: 4, steps: 2, warmup_steps: 0, log_every: 0, eval_every: 1, eval_size: 8, checkpoint_every: 0}\n")},
	}
	for _, c := range cases {
		run := filepath.Join(dir, c.name)
		runOK(t, c.cfg, Options{Dir: run})
		lines := readJSONL[map[string]any](t, filepath.Join(run, runlog.MetricsFile))
		if len(lines) != 2 {
			t.Fatalf("%s: %d evaluation lines, want 2", c.name, len(lines))
		}
		for _, line := range lines {
			if c.name == "text" {
				checkLanguageFigure(t, line, "bits_per_char", line["eval_loss"].(float64)/math.Ln2)
			} else if _, ok := line["bits_per_char"]; ok || line["perplexity"] != nil {
				t.Errorf("copy: evaluation line %v has a language figure", line)
			}
		}
	}
}
