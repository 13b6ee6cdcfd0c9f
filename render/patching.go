package render

import (
	"cmp"
	"fmt"
	"image"
	"math"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/msg"
)

// ActivationPatching is inspect -patch's view: the metric of the corrupted input
// with each component patched from the clean one, as rows (layers, or a
// layer's heads) by columns (positions or heads).
type ActivationPatching struct {
	Kind       string // -patch's: "resid_pre", "z", "z-by-pos"
	Activation string // TransformerLens's name, block N: "blocks.N.attn.hook_z"
	How        string // how the figures are made: "one component a run", or an estimate's words
	Metric     string // what the metric is, in words
	Clean      float64
	Corrupted  float64  // the metric unpatched on the clean and the corrupted input
	RowAxis    string   // "layers", "heads"
	ColAxis    string   // "positions", "heads"
	Rows       []string // "L0", "L0 H1"
	Cols       []string // "H0", or a position's number
	// ColNotes, when set, say what each column is (a position's token),
	// for the table.
	ColNotes []string
	Values   [][]float64 // [row][col]; NaN where not patched
}

// restored is the share of the corrupted-to-clean move that v makes, and
// whether one is defined (the two differ).
func (v ActivationPatching) restored(x float64) (float64, bool) {
	gap := v.Clean - v.Corrupted
	if gap == 0 || math.IsNaN(x) {
		return 0, false
	}
	return (x - v.Corrupted) / gap, true
}

// PatchingRows is how many components the table lists, most moved first.
const PatchingRows = 10

// writePatching prints the view: a line of what was patched and measured,
// the components that move the metric most, then the heatmap of the share
// restored.
func writePatching(p *printer, width int, mode Mode, v ActivationPatching) {
	p.para(width, "patching %s (%s) from the clean input into the corrupted one, %s; metric: %s; clean %.4g, corrupted %.4g; restored = (patched - corrupted) / (clean - corrupted)",
		v.Kind, v.Activation, v.How, v.Metric, v.Clean, v.Corrupted)
	type item struct {
		name   string
		metric float64
	}
	var items []item
	for i, row := range v.Values {
		for j, x := range row {
			if !math.IsNaN(x) {
				name := v.Rows[i] + " " + v.Cols[j]
				if v.ColNotes != nil {
					name = v.Rows[i] + " pos " + v.Cols[j] + " " + msg.Quote(v.ColNotes[j])
				}
				items = append(items, item{name, x})
			}
		}
	}
	slices.SortStableFunc(items, func(a, b item) int {
		return cmp.Compare(math.Abs(b.metric-v.Corrupted), math.Abs(a.metric-v.Corrupted))
	})
	nameW := len("component")
	for _, it := range items[:min(PatchingRows, len(items))] {
		nameW = max(nameW, visibleWidth(it.name))
	}
	nameW = min(nameW, width-1-22)
	p.printf("%-*s %10s %10s\n", nameW, "component", "metric", "restored")
	for _, it := range items[:min(PatchingRows, len(items))] {
		share := "n/a"
		if r, ok := v.restored(it.metric); ok {
			share = fmt.Sprintf("%+.3f", r)
		}
		p.printf("%-*s %10.4g %10s\n", nameW, cutTo(it.name, nameW), it.metric, share)
	}
	if rest := len(items) - PatchingRows; rest > 0 {
		p.para(width, "and %d more components (-json lists them all)", rest)
	}
	if _, ok := v.restored(v.Clean); !ok {
		p.para(width, "no heatmap: the clean and corrupted inputs give the same metric, so no share is restored")
		return
	}
	p.printf("\n")
	p.para(width, "restored, rows = %s, columns = %s (%s = not patched; the colour clamps to [0, 1])", v.RowAxis, v.ColAxis, MaskedGlyph)
	for _, line := range v.heatmap(mode, width) {
		p.printf("%s\n", line)
	}
	p.printf("%s\n", Legend(mode))
}

// heatmap is the share restored as cells, in blocks of as many columns as
// fit in width, the row labels left of each block and the column labels
// above it.
func (v ActivationPatching) heatmap(mode Mode, width int) []string {
	labelW := 0
	for _, r := range v.Rows {
		labelW = max(labelW, visibleWidth(r))
	}
	cellW := 1
	for _, c := range v.Cols {
		cellW = max(cellW, visibleWidth(c)+1)
	}
	per := max(1, (width-1-labelW)/cellW)
	var lines []string
	for from := 0; from < len(v.Cols); from += per {
		to := min(len(v.Cols), from+per)
		if from > 0 {
			lines = append(lines, "")
		}
		head := strings.Repeat(" ", labelW)
		for _, c := range v.Cols[from:to] {
			head += padLeft(c, cellW)
		}
		lines = append(lines, head)
		for i, row := range v.Values {
			line := padRight(v.Rows[i], labelW) + " "
			for _, x := range row[from:to] {
				r, ok := v.restored(x)
				line += cell(clamp01(r), !ok, mode, cellW-1) + " "
			}
			lines = append(lines, strings.TrimRight(line, " "))
		}
	}
	return lines
}

// PatchingImage is the view as a PNG table: a row for each row of the
// heatmap, a column for each of its columns, each cell the share the
// component restores, coloured by it.
func PatchingImage(v ActivationPatching) (image.Image, error) {
	t := ScoreTable{
		Title: []string{fmt.Sprintf("patching %s (%s): %s", v.Kind, v.Activation, v.Metric),
			fmt.Sprintf("clean %.4g, corrupted %.4g; each cell: restored = (patched - corrupted) / (clean - corrupted)", v.Clean, v.Corrupted)},
		Rows: v.Rows,
	}
	for j, c := range v.Cols {
		name := c
		if v.ColNotes != nil {
			name += " " + escape.Label(v.ColNotes[j])
		}
		t.Columns = append(t.Columns, ScoreColumn{Name: name, Lo: 0, Hi: 1, Format: "%+.2f"})
	}
	for _, row := range v.Values {
		shares := make([]float64, len(row))
		for j, x := range row {
			shares[j], _ = v.restored(x)
		}
		t.Values = append(t.Values, shares)
	}
	return Scores(t)
}
