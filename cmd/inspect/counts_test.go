package main

import (
	"regexp"
	"strings"
	"testing"
)

// onePlural is a count of one before a plural noun of the text views.
var onePlural = regexp.MustCompile(`\b1 (examples|tokens|sequences|scored positions|predictions|evaluations|layers|heads)\b`)

// TestCountsOfOne: every count in the text view agrees with its noun: one
// example pooled, one token given, one sequence of prefix matching, never
// "1 tokens".
func TestCountsOfOne(t *testing.T) {
	plainEnv(t, "100")
	out := prose(string(runOK(t, "-checkpoint", testCheckpoint, "-tokens", "5", "-examples", "1", "-mean", "-circuits")))
	if bad := onePlural.FindAllString(out, -1); len(bad) > 0 {
		t.Errorf("counts of one with a plural noun %q in:\n%s", bad, out)
	}
	for _, want := range []string{"roles pooled over 1 example of copy", "prefix matching on 1 sequence of random tokens",
		"of 1 example (the parts sum", "the mean over 1 example of copy", "no position of the 1 token given is one task copy scores"} {
		if !strings.Contains(out, want) {
			t.Errorf("text view lacks %q:\n%s", want, out)
		}
	}
}
