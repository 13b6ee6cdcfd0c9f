package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// thousandHeadsDir writes a random GPT-2 of 32 layers x 32 heads (the
// 1,024 of an 8B model) but d_model 32, so one-wide heads, a vocabulary
// of 16 and a context of 32: under 1 MB, and a forward in milliseconds.
func thousandHeadsDir(t *testing.T) string {
	t.Helper()
	dir := opentest.GPT2Dir(t, model.Config{Vocab: 16, Context: 32, DModel: 32, Heads: 32, Layers: 32, DFF: 32})
	info, err := os.Stat(filepath.Join(dir, "model.safetensors"))
	if err != nil || info.Size() > 4<<20 {
		t.Fatalf("the 1,024-head model's weights: %v, %d bytes; want at most 4 MiB", err, info.Size())
	}
	return dir
}

// Rows of the per-head tables: the circuits' (layer, head, prefix
// matching, ...) and the ablation's (layer, head, role, ...); a grid's
// block header and its row of layer 31.
var (
	headRow   = regexp.MustCompile(`(?m)^ +\d+ +\d+ +(\d\.\d{3} |diffuse)`)
	gridBlock = regexp.MustCompile(`\nlayer +h\d+ `)
	gridLast  = regexp.MustCompile(`\n   31 +[·a-z]`)
)

// TestThousandHeadsFitTheTerminal: a model of 1,024 heads (32 x 32) at 80
// and at 120 columns: no line of the default view or of -summary (with
// -circuits and -ablate) is wider than the terminal; the grid of heads
// comes in blocks of head columns, every layer in each, under a tally of
// the roles; -summary's per-head tables list 16 heads each and sum up the
// other 1,008 in a line; and -layer and -head with lists and ranges pick
// the heads the tables, and the per-head work, cover.
func TestThousandHeadsFitTheTerminal(t *testing.T) {
	dir := thousandHeadsDir(t)
	for _, columns := range []int{80, 120} {
		t.Setenv("COLUMNS", strconv.Itoa(columns))
		for _, c := range []struct {
			args []string
			rows int // the rows of the per-head tables
		}{
			{nil, 0},
			{[]string{"-summary", "-circuits", "-ablate"}, 2 * 16},
			{[]string{"-summary", "-circuits", "-ablate", "-layer", "0,30-31", "-head", "1-2"}, 3 * 6}, // the heads', the circuits' and the ablation's tables
		} {
			var stdout bytes.Buffer
			args := append([]string{dir, "-examples", "2", "-color", "never"}, c.args...)
			if err := run(args, &stdout, io.Discard); err != nil {
				t.Fatalf("%q: %v", args, err)
			}
			out := stdout.String()
			for i, line := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(line); n > columns {
					t.Errorf("%q at %d columns: line %d is %d wide: %q", c.args, columns, i+1, n, line)
				}
			}
			if n := len(headRow.FindAllString(out, -1)); n != c.rows {
				t.Errorf("%q at %d columns: %d rows of per-head tables, want %d:\n%s", c.args, columns, n, c.rows, out)
			}
			if c.rows == 2*16 && strings.Count(prose(out), "the other 1008 heads:") != 2 {
				t.Errorf("%q at %d columns: the other 1,008 heads are not summed up in each table:\n%s", c.args, columns, out)
			}
			if len(c.args) > 3 {
				continue
			}
			blocks := (32 + (columns-6)/4 - 1) / ((columns - 6) / 4) // "layer " then 4 columns a cell
			n, last := len(gridBlock.FindAllString(out, -1)), len(gridLast.FindAllString(out, -1))
			if strings.Count(out, "layer   h0 ") != 1 || n != blocks || last != blocks {
				t.Errorf("%q at %d columns: a grid in %d blocks, layer 31 in %d; want one grid in %d blocks, layer 31 in each:\n%s", c.args, columns, n, last, blocks, out)
			}
			if !regexp.MustCompile(`\n1024 heads: \d+ diffuse`).MatchString(out) {
				t.Errorf("%q at %d columns: no tally of the 1,024 heads' roles:\n%s", c.args, columns, out)
			}
		}
	}
}
