package render

import (
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// CorpusView is inspect -corpus's text view: every head's statistics over
// windows of a text, each a mean and a spread.
type CorpusView struct {
	Title   string   // what was measured on what: the first paragraph
	Notes   []string // paragraphs under it: what the columns mean
	Columns []string // the statistics' short names, in the order of each row's values
	// Lower is the column where a low mean is the strong one (entropy: a
	// sharp head), -1 for none.
	Lower int
	Heads []CorpusRow // in the model's order
}

// CorpusRow is one head's statistics: Mean[k] and SD[k] of Columns[k].
type CorpusRow struct {
	Layer, Head int
	Mean, SD    []float64
}

// CorpusAllHeads is the most heads the view lists whole; past it, each
// statistic gets a table of its CorpusStrongest heads and a line on the
// others, so that 1,024 heads take a screen or two, not a thousand lines.
const (
	CorpusAllHeads  = 32
	CorpusStrongest = 8
)

// corpusCell is one "mean±sd" cell's width: "0.12±0.03".
const corpusCell = 10

// WriteCorpus prints v laid out to width columns: the title and notes
// wrapped, then the heads' table, every head or, past CorpusAllHeads, the
// strongest of each statistic.
func WriteCorpus(w io.Writer, v CorpusView, width int) error {
	p := &printer{w: w}
	p.para(width, "%s", escape.Label(v.Title))
	for _, n := range v.Notes {
		p.para(width, "%s", escape.Label(n))
	}
	if len(v.Heads) <= CorpusAllHeads {
		writeCorpusRows(p, v, v.Heads)
		return errors.Wrap(p.err, "writing the head statistics")
	}
	for k, name := range v.Columns {
		rows := slices.Clone(v.Heads)
		order := func(a, b CorpusRow) int { return cmp.Compare(b.Mean[k], a.Mean[k]) }
		which := "highest"
		if k == v.Lower {
			order = func(a, b CorpusRow) int { return cmp.Compare(a.Mean[k], b.Mean[k]) }
			which = "lowest"
		}
		slices.SortStableFunc(rows, order)
		p.printf("\n")
		p.para(width, "%s: the %d of the %d heads of %s mean:", escape.Label(name), CorpusStrongest, len(rows), which)
		writeCorpusRows(p, v, rows[:CorpusStrongest])
		rest := rows[CorpusStrongest:]
		p.para(width, "the other %s: %s mean from %.2f to %.2f", msg.Count(len(rest), "head"), escape.Label(name), rest[len(rest)-1].Mean[k], rest[0].Mean[k])
	}
	return errors.Wrap(p.err, "writing the head statistics")
}

// writeCorpusRows prints the column heads and one row per head.
func writeCorpusRows(p *printer, v CorpusView, rows []CorpusRow) {
	p.printf("%5s %4s", "layer", "head")
	for _, c := range v.Columns {
		p.printf(" %*s", corpusCell, cutTo(escape.Label(c), corpusCell))
	}
	p.printf("\n")
	for _, r := range rows {
		p.printf("%5d %4d", r.Layer, r.Head)
		for k := range v.Columns {
			p.printf(" %*s", corpusCell, fmt.Sprintf("%.2f±%.2f", r.Mean[k], r.SD[k]))
		}
		p.printf("\n")
	}
}
