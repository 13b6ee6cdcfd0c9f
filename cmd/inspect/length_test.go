package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// familyCheckpoint saves an untrained copy model (length 4) of the given
// attention variant and returns its path.
func familyCheckpoint(t *testing.T, cfg model.Config) string {
	t.Helper()
	cfg.Vocab, cfg.Context, cfg.DModel, cfg.Heads, cfg.Layers, cfg.OutBias = 9, 8, 16, 4, 1, true
	return newCheckpoint(t, cfg, data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
}

// TestLengthAndFamily: -length shows an example of another task length on
// a model whose positions allow it (rope: 12 positions on a model trained
// on 8), names the
// variant in the text header, the PNG title's source (the JSON's family),
// and is refused beyond a learned position table with a one-line message.
func TestLengthAndFamily(t *testing.T) {
	rope := familyCheckpoint(t, model.Config{Position: "rope", KVHeads: 2, Window: 3})
	var out, errOut bytes.Buffer
	if err := run([]string{"-checkpoint", rope, "-length", "6", "-color", "never"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "rope positions (base 10000), 2 kv heads (grouped-query), window 3") {
		t.Errorf("header does not name the variant:\n%s", text[:min(len(text), 300)])
	}
	if !strings.Contains(text, "position     0   1   2   3   4   5   6   7   8   9  10  11") {
		t.Errorf("-length 6 does not show 12 positions:\n%s", text[:min(len(text), 600)])
	}
	out.Reset()
	if err := run([]string{"-checkpoint", rope, "-length", "6", "-json"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Tokens []int  `json:"tokens"`
		Family string `json:"family"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Tokens) != 12 || j.Family != "rope positions (base 10000), 2 kv heads (grouped-query), window 3" {
		t.Errorf("JSON has %d tokens and family %q", len(j.Tokens), j.Family)
	}
	learned := familyCheckpoint(t, model.Config{})
	refused(t, "-length beyond a learned table", []string{"-checkpoint", learned, "-length", "6"},
		"-length 6: the example has 12 positions, beyond the model's learned position table of 8")
}

// TestSummary: -summary prints the model and one line per head, nothing
// else, and each line's role, score and entropy are those of -json.
func TestSummary(t *testing.T) {
	text := string(runOK(t, "-checkpoint", testCheckpoint, "-summary", "-color", "never"))
	var j struct {
		Heads [][]struct {
			Role    string  `json:"role"`
			Score   float64 `json:"score"`
			OffsetK int     `json:"offset_k"`
			Entropy float64 `json:"entropy"`
		} `json:"heads"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", testCheckpoint, "-json"), &j); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var rows []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 4 && f[0] != "layer" && strings.Trim(f[0], "0123456789") == "" {
			rows = append(rows, l)
		}
	}
	want := len(j.Heads) * len(j.Heads[0])
	if len(rows) != want || len(lines) > want+5 || strings.Contains(text, "sequence") || strings.Contains(text, "@") {
		t.Fatalf("-summary printed %d lines with %d head rows, want the model, the table and nothing else:\n%s", len(lines), len(rows), text)
	}
	for _, row := range rows {
		var l, h int
		if _, err := fmt.Sscan(row, &l, &h); err != nil {
			t.Fatal(err)
		}
		r := j.Heads[l][h]
		name := r.Role
		if r.Role == "offset" {
			name = fmt.Sprintf("offset k=%d", r.OffsetK)
		}
		if !strings.Contains(row, name) || !strings.HasSuffix(row, fmt.Sprintf("%5.2f %7.2f", r.Score, r.Entropy)) {
			t.Errorf("row %q, want role %q, score %.2f, entropy %.2f", row, name, r.Score, r.Entropy)
		}
	}
}

// TestLengthSaid: -length N says N where it shows it (the example's line)
// and where it does not: -summary says it leaves the example out, and the
// roles say they are scored at the trained length.
func TestLengthSaid(t *testing.T) {
	plainEnv(t, "100")
	rope := familyCheckpoint(t, model.Config{Position: "rope"})
	summary := prose(string(runOK(t, "-checkpoint", rope, "-length", "6", "-summary")))
	for _, want := range []string{"roles pooled over 64 examples of copy at its trained length (seed 1)", "-length 6 changes only the example shown, which -summary leaves out"} {
		if !strings.Contains(summary, want) {
			t.Errorf("-length 6 -summary lacks %q:\n%s", want, summary)
		}
	}
	full := prose(string(runOK(t, "-checkpoint", rope, "-length", "6")))
	if want := "sequence (one example of task copy at length 6, drawn with seed 1):"; !strings.Contains(full, want) {
		t.Errorf("-length 6 lacks %q:\n%.1500s", want, full)
	}
	if trained := prose(string(runOK(t, "-checkpoint", rope, "-summary"))); strings.Contains(trained, "length") {
		t.Errorf("without -length, -summary speaks of a length:\n%s", trained)
	}
}
