package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/open/opentest"
)

// runWithin runs the command, failing the test when it does not return
// within 20 s (it hung on small vocabularies).
func runWithin(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, notes bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(args, &out, &notes) }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("run %q did not return in 20 s", args)
	}
	return out.String(), notes.String(), err
}

// TestSmallVocabulary: a model trained elsewhere with fewer ordinary tokens
// than a copy of the repeated-tokens task needs (vocabularies of 1, 2, 4,
// 30 and 40 ids, without tokenizer files) shows its view, with -circuits,
// and says its tokens are drawn with replacement; a DNA model of 4 tokens
// shows -text too. Each of these never returned.
func TestSmallVocabulary(t *testing.T) {
	plainEnv(t, "100")
	for _, vocab := range []int{1, 2, 4, 30, 40} {
		dir := opentest.TinyGPT2Dir(t, vocab, nil)
		out, _, err := runWithin(t, dir, "-circuits", "-examples", "2", "-color", "never")
		if err != nil {
			t.Errorf("vocabulary of %d: %v", vocab, err)
			continue
		}
		note := fmt.Sprintf("the tokenizer has %s, fewer than the 50 distinct ones a copy needs, so they are drawn with replacement", msg.Count(vocab, "ordinary token"))
		if !strings.Contains(strings.Join(strings.Fields(out), " "), note) || !strings.Contains(out, "logit lens") {
			t.Errorf("vocabulary of %d: the view lacks %q or the circuits:\n%s", vocab, note, out)
		}
	}
	dna := opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles)
	out, _, err := runWithin(t, dna, "-text", "gattaca", "-color", "never")
	if err != nil || !strings.Contains(out, "sequence (from -text;") {
		t.Errorf("-text on a DNA model: %v\n%s", err, out)
	}
	if strings.Contains(out, "with replacement") {
		t.Errorf("-text scores the roles on the text given, yet the view notes the task's draw:\n%s", out)
	}
}
