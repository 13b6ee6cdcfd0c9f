package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/heads"
)

// inductionCheckpoint is the committed induction run's checkpoint (see
// package ablation's test for how to regenerate it).
const inductionCheckpoint = "../../testdata/induction/checkpoint.safetensors"

// TestAblateInduction: on the trained induction model inspect labels a
// layer-0 head previous-token and a layer-1 head induction, -ablate -json
// carries the table with those two heads on top and every row's role equal
// to that head's role in "heads", and the text view prints the same rows
// in the same order.
func TestAblateInduction(t *testing.T) {
	plainEnv(t, "100")
	var out struct {
		Heads    [][]heads.Result `json:"heads"`
		Ablation *ablation.Table  `json:"ablation"`
	}
	if err := json.Unmarshal(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-json"), &out); err != nil {
		t.Fatal(err)
	}
	a := out.Ablation
	if a == nil || a.Mode != ablation.Zero || len(a.Rows) != 8 {
		t.Fatalf("ablation %+v, want a zero-ablation table of 8 rows", a)
	}
	found := map[string]bool{} // "layer role"
	for l, layer := range out.Heads {
		for _, r := range layer {
			found[fmt.Sprintf("%d %s", l, r.Role)] = true
		}
	}
	if !found["0 previous-token"] || !found["1 induction"] {
		t.Errorf("roles %v: want a layer-0 previous-token head and a layer-1 induction head", out.Heads)
	}
	for i, row := range a.Rows {
		if want := out.Heads[row.Layer][row.Head].String(); row.Role != want {
			t.Errorf("row %d: role %q, heads says %q", i, row.Role, want)
		}
	}
	if got := []heads.Pattern{out.Heads[a.Rows[0].Layer][a.Rows[0].Head].Role, out.Heads[a.Rows[1].Layer][a.Rows[1].Head].Role}; !(got[0] == heads.PreviousToken && got[1] == heads.Induction || got[0] == heads.Induction && got[1] == heads.PreviousToken) {
		t.Errorf("the two most important heads have roles %v, want previous-token and induction", got)
	}
	text := string(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-color", "never"))
	at := strings.Index(text, "ablation (zero)")
	if at < 0 {
		t.Fatalf("no ablation table in the text view:\n%s", text)
	}
	lines := strings.Split(text[at:], "\n")
	var rows []string
	for _, line := range lines {
		if f := strings.Fields(line); len(f) > 2 && f[0] != "layer" && strings.Trim(f[0], "0123456789") == "" {
			rows = append(rows, f[0]+" "+f[1])
		}
	}
	if len(rows) != len(a.Rows) {
		t.Fatalf("text table has %d rows, JSON %d:\n%s", len(rows), len(a.Rows), text[at:])
	}
	for i, row := range a.Rows {
		if want := fmt.Sprintf("%d %d", row.Layer, row.Head); rows[i] != want {
			t.Errorf("text row %d is layer/head %s, JSON %s", i, rows[i], want)
		}
	}
}

// TestAblateSummary: -ablate -summary prints the heads' table and the
// ablation table (issue 43: it printed the heads' table alone), every
// line within the width, and no heatmap.
func TestAblateSummary(t *testing.T) {
	plainEnv(t, "72")
	out := string(runOK(t, "-checkpoint", inductionCheckpoint, "-ablate", "-summary"))
	for _, want := range []string{"layer head", "ablation (zero): each head's output replaced by zeros on the 1000", "Δexact"} {
		if !strings.Contains(out, want) {
			t.Errorf("-ablate -summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "heatmaps") {
		t.Errorf("-ablate -summary shows heatmaps:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > 71 {
			t.Errorf("a line of %d at 72 columns: %s", n, line)
		}
	}
}
