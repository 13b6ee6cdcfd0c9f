package main

import (
	"bytes"
	"testing"
)

// TestModelArgument: the model given as the first argument, before or after
// the flags, shows what -checkpoint shows.
func TestModelArgument(t *testing.T) {
	want := string(runOK(t, "-checkpoint", testCheckpoint, "-summary", "-color", "never"))
	for _, args := range [][]string{
		{testCheckpoint, "-summary", "-color", "never"},
		{"-summary", "-color", "never", testCheckpoint},
		{testCheckpoint, "-checkpoint", "./" + testCheckpoint, "-summary", "-color", "never"},
	} {
		if got := string(runOK(t, args...)); got != want {
			t.Errorf("%q printed\n%s\nwant what -checkpoint prints:\n%s", args, got, want)
		}
	}
}

// TestOldFlagNames: -samples and -train, inspect's old names of -examples
// and -training-graph, do what the new names do, with one note each on
// stderr.
func TestOldFlagNames(t *testing.T) {
	for _, c := range []struct {
		old, now string
		args     []string // the other arguments
	}{
		{"-samples", "-examples", []string{"3", "-json"}},
		{"-train", "-training-graph", []string{"-graph"}},
	} {
		want := string(runOK(t, append([]string{testCheckpoint, c.now}, c.args...)...))
		var stdout, stderr bytes.Buffer
		if err := run(append([]string{testCheckpoint, c.old}, c.args...), &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", c.old, err)
		}
		wantNote := "note: " + c.old + " is now called " + c.now + " (the old name still works)\n"
		if stdout.String() != want || stderr.String() != wantNote {
			t.Errorf("%s: stderr %q, want %q; stdout the same as with %s: %v", c.old, stderr.String(), wantNote, c.now, stdout.String() == want)
		}
	}
}
