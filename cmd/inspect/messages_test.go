package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestPatchingUndefined: on a Mistral of window 1 the corruption of the
// first copy cannot move the scored logits, so no head has a fall to
// restore: -circuits shows every other measure, the patched column as
// n/a and the reason once, and -json has restored null and the reason
// (it aborted the whole view with "nothing to restore").
func TestPatchingUndefined(t *testing.T) {
	plainEnv(t, "100")
	dir := editedFixture(t, "mistral", `"sliding_window": 4`, `"sliding_window": 1`)
	var stdout strings.Builder
	if err := run([]string{dir, "-circuits", "-examples", "2", "-color", "never", "-summary"}, &stdout, io.Discard); err != nil {
		t.Fatalf("-circuits on a window of 1: %v", err)
	}
	out := strings.Join(strings.Fields(stdout.String()), " ")
	for _, want := range []string{"activation patching: undefined, patched is n/a: corrupting the first copy leaves the correct token's logit where it was",
		"0 0 ", " n/a 0 1 ", "direct logit attribution", "in-context learning", "logit lens", "composition"} {
		if !strings.Contains(out, want) {
			t.Errorf("-circuits on a window of 1 lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if err := run([]string{dir, "-circuits", "-examples", "2", "-json"}, &stdout, io.Discard); err != nil {
		t.Fatalf("-circuits -json on a window of 1: %v", err)
	}
	var doc struct {
		Circuits struct {
			Patching map[string]json.RawMessage `json:"patching"`
		} `json:"circuits"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
		t.Fatal(err)
	}
	p := doc.Circuits.Patching
	if string(p["restored"]) != "null" || !strings.Contains(string(p["undefined"]), "no fall to restore") || p["clean_logit"] == nil {
		t.Errorf("-json patching on a window of 1: %v; want restored null, the reason in undefined and the logits", p)
	}
}
