package main

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/report"
)

// prose is a text view with its wrapped paragraphs joined again (a
// continuation line starts with two spaces), for finding a phrase
// wherever the width broke it.
func prose(out string) string { return strings.ReplaceAll(out, "\n  ", " ") }

// TestLayoutWidth: the text views are laid out to the terminal's width
// when stdout is one, else to COLUMNS when it is a positive integer, else
// to 80 columns.
func TestLayoutWidth(t *testing.T) {
	for _, c := range []struct {
		terminal int
		columns  string
		want     int
	}{
		{100, "120", 100}, // the terminal's, even with COLUMNS set
		{100, "", 100},
		{0, "120", 120}, // not a terminal: COLUMNS
		{0, "", 80},
		{0, "wide", 80},
		{0, "0", 80},
		{0, "-40", 80},
	} {
		terminal := func(io.Writer) int { return c.terminal }
		getenv := func(key string) string {
			if key == "COLUMNS" {
				return c.columns
			}
			return ""
		}
		if got := layoutWidth(io.Discard, terminal, getenv); got != c.want {
			t.Errorf("terminal width %d, COLUMNS %q: laid out to %d columns, want %d", c.terminal, c.columns, got, c.want)
		}
	}
}

// manyHeadsWideDir writes a random GPT-2 of 12 layers x 12 heads (GPT-2
// small's 144) with a vocabulary of 200 ids and no tokenizer files, as a
// Hugging Face directory: its default sequence is 101 repeated tokens.
func manyHeadsWideDir(t *testing.T) string {
	return opentest.GPT2Dir(t, model.Config{Vocab: 200, Context: 128, DModel: 24, Heads: 12, Layers: 12, DFF: 48})
}

// panelTitle is a heatmap's title line.
var panelTitle = regexp.MustCompile(`(?m)^layer \d+ head \d+$`)

// TestManyHeadsFitTheTerminal: a 144-head model's default view at 80 and
// at 120 columns (COLUMNS, stdout not a terminal) has no line wider than
// the terminal: the heads' grid, then the heatmaps of the
// report.StrongestShown heads of highest role score, binned to fit, with
// a line pointing to -html for every head. A selected head and -summary
// fit 80 columns too.
func TestManyHeadsFitTheTerminal(t *testing.T) {
	dir := manyHeadsWideDir(t)
	for _, c := range []struct {
		columns int
		args    []string
		panels  int
	}{
		{80, nil, report.StrongestShown},
		{120, nil, report.StrongestShown},
		{80, []string{"-layer", "3", "-head", "5"}, 1},
		{80, []string{"-summary"}, 0},
	} {
		t.Setenv("COLUMNS", strconv.Itoa(c.columns))
		var stdout bytes.Buffer
		args := append([]string{dir, "-examples", "2", "-color", "never"}, c.args...)
		if err := run(args, &stdout, io.Discard); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		out := stdout.String()
		for i, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > c.columns {
				t.Errorf("%q at %d columns: line %d is %d wide: %q", c.args, c.columns, i+1, n, line)
			}
		}
		if selected := c.panels == 1; strings.Contains(out, "layer   h0") == selected {
			t.Errorf("%q at %d columns: want the grid of heads exactly when no head is selected:\n%.2000s", c.args, c.columns, out)
		}
		if n := len(panelTitle.FindAllString(out, -1)); n != c.panels {
			t.Errorf("%q at %d columns: %d heatmaps, want %d", c.args, c.columns, n, c.panels)
		}
		if c.panels == 0 {
			continue
		}
		if !strings.Contains(prose(out), "binned to fit "+strconv.Itoa(c.columns)+" columns") {
			t.Errorf("%q at %d columns: the heatmaps of 101 positions are not said to be binned:\n%s", c.args, c.columns, out)
		}
		if c.args == nil && !strings.Contains(prose(out), "heatmaps of the 4 heads of highest role score of 144: -layer N -head H draws another, -layer N a whole layer; -html FILE shows every head on one page") {
			t.Errorf("default view at %d columns: no line naming the heads drawn and where every head is:\n%s", c.columns, out)
		}
	}
}
