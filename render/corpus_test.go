package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// corpusHeads is a view of layers x heads heads whose means rise with
// their number, the entropy's falling (so head i is the strongest on
// every score with the largest i), each spread a tenth of its mean.
func corpusHeads(layers, heads int) CorpusView {
	v := CorpusView{Title: "head statistics of a model over 9 windows", Notes: []string{"scores as TransformerLens's"},
		Columns: []string{"prev", "dup", "induction", "first", "self", "entropy"}, Lower: 5}
	n := float64(layers * heads)
	for i := range layers * heads {
		x := float64(i) / n
		mean := []float64{x, x, x, x, x, 5 * (1 - x)}
		sd := make([]float64, len(mean))
		for k, m := range mean {
			sd[k] = m / 10
		}
		v.Heads = append(v.Heads, CorpusRow{Layer: i / heads, Head: i % heads, Mean: mean, SD: sd})
	}
	return v
}

var corpusViewRow = regexp.MustCompile(`(?m)^ +(\d+) +(\d+)(?: +\d+\.\d\d±\d+\.\d\d){6}$`)

// TestCorpusViewFitsManyHeads: a view of 1,024 heads (32 x 32) at 80 and
// 120 columns has no line wider than the terminal and lists, for each of
// the six statistics, its 8 strongest heads (the entropy's lowest) and a
// line summing up the other 1,016; a view of 2 x 4 heads lists every head
// once in the model's order.
func TestCorpusViewFitsManyHeads(t *testing.T) {
	for _, columns := range []int{80, 120} {
		var out bytes.Buffer
		if err := WriteCorpus(&out, corpusHeads(32, 32), columns); err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > columns {
				t.Errorf("%d columns: line %d is %d wide: %q", columns, i+1, n, line)
			}
		}
		rows := corpusViewRow.FindAllStringSubmatch(out.String(), -1)
		if len(rows) != 6*CorpusStrongest || strings.Count(out.String(), "the other 1016 heads:") != 6 {
			t.Fatalf("%d columns: %d rows and %d summaries, want %d and 6:\n%s", columns, len(rows), strings.Count(out.String(), "the other 1016 heads:"), 6*CorpusStrongest, out.String())
		}
		for k, row := range rows {
			if want := fmt.Sprintf("31 %d", 31-k%CorpusStrongest); row[1]+" "+row[2] != want {
				t.Errorf("%d columns: row %d is layer %s head %s, want %s (the strongest first)", columns, k, row[1], row[2], want)
			}
		}
		if !strings.Contains(out.String(), "entropy: the 8 of the 1024 heads of lowest mean:") {
			t.Errorf("%d columns: entropy's table is not of the lowest:\n%s", columns, out.String())
		}
	}
	var out bytes.Buffer
	if err := WriteCorpus(&out, corpusHeads(2, 4), 80); err != nil {
		t.Fatal(err)
	}
	rows := corpusViewRow.FindAllStringSubmatch(out.String(), -1)
	if len(rows) != 8 || rows[0][1]+rows[0][2] != "00" || rows[7][1]+rows[7][2] != "13" || strings.Contains(out.String(), "the other") {
		t.Errorf("8 heads are not listed whole in the model's order:\n%s", out.String())
	}
}
