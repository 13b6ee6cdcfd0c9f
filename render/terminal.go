package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/pkg/errors"
	"golang.org/x/text/width"
)

// Mode selects how a terminal cell shows a weight.
type Mode int

const (
	Plain     Mode = iota // the character ramp " .:-=+*#%@", no escape sequences
	Color256              // xterm 256-colour backgrounds (ESC[48;5;Nm)
	TrueColor             // 24-bit backgrounds (ESC[48;2;R;G;Bm)
)

func (m Mode) String() string {
	switch m {
	case Plain:
		return "plain"
	case Color256:
		return "256-colour"
	case TrueColor:
		return "24-bit colour"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Panel is one heatmap: a (T, T) weight matrix with its labels.
type Panel struct {
	Title   string      // first line, e.g. "layer 0 head 2"
	Weights [][]float64 // (T, T), rows = queries, columns = keys
	Rows    []string    // T query labels
	Cols    []string    // T key labels
	Causal  bool        // draw keys after the query (j > i) as masked
	Window  int         // > 0: draw keys at or before i-Window as masked too (a sliding window's band)
	Notes   []string    // lines printed under the heatmap

	// Marks drawn in a PNG (the terminal view shows the predictions in its
	// own table). Each is nil or has one entry per position.
	Scored    []bool   // query rows the task scores: a ">" before the row label
	Separator []bool   // positions holding the separator: labels in blue
	Predicted []string // the model's prediction at each position, right of the map
	Correct   []bool   // at scored rows: the prediction is right (green) or wrong (red)
}

// maxLabel is the widest label shown; longer labels are cut. Six columns
// hold an escaped character whole (\u202e).
const maxLabel = 6

// gap separates panels drawn side by side.
const gap = "   "

// Masked reports whether key j is hidden from query i: after it when the
// panel is causal, or out of its window.
func (p Panel) Masked(i, j int) bool {
	return p.Causal && j > i || p.Window > 0 && j <= i-p.Window
}

func (p Panel) check() error {
	t := len(p.Weights)
	if t == 0 {
		return errors.Errorf("panel %q: no weights", p.Title)
	}
	if len(p.Rows) != t || len(p.Cols) != t {
		return errors.Errorf("panel %q: %d rows of weights but %d row labels and %d column labels", p.Title, t, len(p.Rows), len(p.Cols))
	}
	for i, row := range p.Weights {
		if len(row) != t {
			return errors.Errorf("panel %q: weight row %d has %d keys, want %d", p.Title, i, len(row), t)
		}
	}
	return nil
}

// lines draws the panel; every line has the same visible width. Cells are
// as wide as the widest key label plus one, so labels sit on one line above
// their column; compact cells are two characters wide with the key labels
// written top to bottom, for maps that would not fit otherwise.
func (p Panel) lines(mode Mode, compact bool) []string {
	rw := 0
	for _, l := range p.Rows {
		rw = max(rw, labelWidth(l))
	}
	cw, lw := 2, 0 // a cell is at least two characters so the map is not too narrow
	for _, l := range p.Cols {
		lw = max(lw, labelWidth(l))
	}
	if !compact {
		cw = max(cw, lw+1) // +1 keeps adjacent column labels apart
	}
	var out []string
	out = append(out, p.Title)
	var b strings.Builder
	if compact {
		for k := range lw {
			b.Reset()
			b.WriteString(strings.Repeat(" ", rw+1))
			for _, l := range p.Cols {
				r := []rune(cut(l))
				c := ' '
				if at := k - (lw - len(r)); at >= 0 {
					c = r[at]
				}
				b.WriteString(padLeft(string(c), cw))
			}
			out = append(out, b.String())
		}
	} else {
		b.WriteString(strings.Repeat(" ", rw+1))
		for _, l := range p.Cols {
			b.WriteString(padLeft(cut(l), cw))
		}
		out = append(out, b.String())
	}
	for i, row := range p.Weights {
		b.Reset()
		b.WriteString(padLeft(cut(p.Rows[i]), rw))
		b.WriteByte(' ')
		for j, v := range row {
			b.WriteString(cell(v, p.Masked(i, j), mode, cw))
		}
		out = append(out, b.String())
	}
	out = append(out, p.Notes...)
	return padAll(out)
}

// compactWidth is the width of lines(mode, true), without drawing them.
func (p Panel) compactWidth() int {
	w := visibleWidth(p.Title)
	for _, n := range p.Notes {
		w = max(w, visibleWidth(n))
	}
	rw := 0
	for _, l := range p.Rows {
		rw = max(rw, labelWidth(l))
	}
	return max(w, rw+1+2*len(p.Cols))
}

// MaskedGlyph marks a masked cell (a key after the query), drawn once at
// the right of the cell on the terminal's background in every mode. A weight
// fills its whole cell (ramp characters or a colour), so neither a weight
// below 0.1 (blank in plain mode) nor a near-black colour reads as masked.
const MaskedGlyph = "·"

// cell is one weight drawn w characters wide.
func cell(v float64, masked bool, mode Mode, w int) string {
	if masked {
		return padLeft(MaskedGlyph, w)
	}
	switch mode {
	case TrueColor:
		c := Color(v)
		return fmt.Sprintf("\x1b[48;2;%d;%d;%dm%s\x1b[0m", c.R, c.G, c.B, strings.Repeat(" ", w))
	case Color256:
		return fmt.Sprintf("\x1b[48;5;%dm%s\x1b[0m", xterm256(Color(v)), strings.Repeat(" ", w))
	}
	return strings.Repeat(string(RampChar(v)), w)
}

// Legend is the one-line scale for a mode: weight 0 on the left, 1 on the
// right.
func Legend(mode Mode) string {
	if mode == Plain {
		return fmt.Sprintf("scale 0 [%s] 1", Ramp)
	}
	var b strings.Builder
	b.WriteString("scale 0 ")
	for i := range 11 {
		b.WriteString(cell(float64(i)/10, false, mode, 2))
	}
	b.WriteString(" 1")
	return b.String()
}

// maskedLegend explains the masked glyph, on its own line so that it fits
// under the narrowest panel.
const maskedLegend = MaskedGlyph + " = masked"

// Terminal writes the panels in rows of as many as fit side by side in
// width columns (width <= 0: no limit, one row), a blank line between rows,
// then the scale legend and the masked glyph. When even one panel is wider than width, every
// panel is drawn compact (two-character cells, key labels written
// downwards); when a compact panel is still wider, every panel is binned
// (Binned) by the smallest number of positions that fits, and a line under
// the legend says so.
func Terminal(w io.Writer, panels []Panel, mode Mode, width int) error {
	panels = shownPanels(panels)
	drawn := make([][]string, len(panels))
	compact := false
	for i, p := range panels {
		if err := p.check(); err != nil {
			return err
		}
		drawn[i] = p.lines(mode, false)
		compact = compact || (width > 0 && visibleWidth(drawn[i][0]) > width)
	}
	bin := 1
	if compact {
		bin = binToFit(panels, width)
		for i, p := range panels {
			drawn[i] = p.Binned(bin).lines(mode, true)
		}
	}
	var out []string
	for start := 0; start < len(drawn); {
		end, used := start+1, visibleWidth(drawn[start][0])
		for end < len(drawn) && (width <= 0 || used+len(gap)+visibleWidth(drawn[end][0]) <= width) {
			used += len(gap) + visibleWidth(drawn[end][0])
			end++
		}
		if start > 0 {
			out = append(out, "")
		}
		out = append(out, joinSideBySide(drawn[start:end])...)
		start = end
	}
	out = append(out, Legend(mode), maskedLegend)
	for _, l := range out {
		if _, err := fmt.Fprintln(w, strings.TrimRight(l, " ")); err != nil {
			return errors.Wrap(err, "writing heatmap")
		}
	}
	if bin > 1 {
		p := &printer{w: w}
		p.para(width, "binned to fit %d columns: a cell is %d query positions by %d key positions (the queries' mean share of attention to those keys), a row or column labelled by its first position; -png FILE or -html FILE draws every position",
			width, bin, bin)
		return errors.Wrap(p.err, "writing heatmap")
	}
	return nil
}

// binToFit is the smallest number of positions a bin holds (1: none
// binned) for which every panel drawn compact fits width columns; the
// whole sequence in one bin when none does.
func binToFit(panels []Panel, width int) int {
	longest := 0
	for _, p := range panels {
		longest = max(longest, len(p.Weights))
	}
	for bin := 1; bin < longest; bin++ {
		fits := true
		for _, p := range panels {
			fits = fits && p.Binned(bin).compactWidth() <= width
		}
		if fits {
			return bin
		}
	}
	return max(1, longest)
}

// Binned is the panel with its positions grouped bin at a time (the last
// bin may hold fewer): cell (I, J) is the share of attention the queries of
// bin I give the keys of bin J, summed over those keys and averaged over
// the queries, so each row still sums to what the panel's rows do. Axes
// are labelled by each bin's first position. A cell is masked when every
// key of it is masked for every query: bins of a causal panel are causal
// too, and a window of W positions is a window of ceil((W+bin-1)/bin)
// bins. Binned(1) is the panel itself.
func (p Panel) Binned(bin int) Panel {
	if bin <= 1 {
		return p
	}
	t := len(p.Weights)
	n := (t + bin - 1) / bin
	labels := make([]string, n)
	weights := make([][]float64, n)
	for i := range n {
		labels[i] = strconv.Itoa(i * bin)
		weights[i] = make([]float64, n)
		queries := p.Weights[i*bin : min(t, (i+1)*bin)]
		for _, row := range queries {
			for j, v := range row {
				weights[i][j/bin] += v / float64(len(queries))
			}
		}
	}
	window := 0
	if p.Window > 0 {
		window = (p.Window + 2*bin - 2) / bin
	}
	return Panel{Title: p.Title, Weights: weights, Rows: labels, Cols: labels, Causal: p.Causal, Window: window, Notes: p.Notes}
}

// joinSideBySide puts blocks of equal-width lines next to each other, padding
// the shorter blocks with blank lines.
func joinSideBySide(blocks [][]string) []string {
	height := 0
	for _, b := range blocks {
		height = max(height, len(b))
	}
	out := make([]string, height)
	for i := range out {
		var b strings.Builder
		for k, block := range blocks {
			if k > 0 {
				b.WriteString(gap)
			}
			if i < len(block) {
				b.WriteString(block[i])
			} else {
				b.WriteString(strings.Repeat(" ", visibleWidth(block[0])))
			}
		}
		out[i] = b.String()
	}
	return out
}

// Row is one named line of a Table.
type Row struct {
	Name  string
	Cells []string
}

// Table writes rows of cells aligned in columns under their names, wrapping
// to width columns (width <= 0: no limit). Cells are cut to maxLabel like
// the heatmaps' labels. Every row should have as many cells as the first.
func Table(w io.Writer, rows []Row, width int) error {
	if len(rows) == 0 {
		return nil
	}
	rows = shownRows(rows)
	nw, cw := 0, 1
	for _, r := range rows {
		nw = max(nw, utf8.RuneCountInString(r.Name)+1) // +1 sets the names apart
		for _, c := range r.Cells {
			cw = max(cw, labelWidth(c))
		}
	}
	cw++ // one space between columns
	n := len(rows[0].Cells)
	per := n
	if width > 0 {
		per = max(1, (width-nw)/cw)
	}
	for start := 0; start < n; start += per {
		if start > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return errors.Wrap(err, "writing table")
			}
		}
		for _, r := range rows {
			var b strings.Builder
			b.WriteString(padRight(r.Name, nw))
			for i := start; i < min(n, start+per); i++ {
				c := ""
				if i < len(r.Cells) {
					c = r.Cells[i]
				}
				b.WriteString(padLeft(cut(c), cw))
			}
			if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
				return errors.Wrap(err, "writing table")
			}
		}
	}
	return nil
}

// cut shortens a label to at most maxLabel columns.
func cut(s string) string {
	used := 0
	for i, r := range s {
		if used += cells(r); used > maxLabel {
			return s[:i]
		}
	}
	return s
}

func labelWidth(s string) int { return min(maxLabel, visibleWidth(s)) }

func padLeft(s string, w int) string {
	return strings.Repeat(" ", max(0, w-visibleWidth(s))) + s
}

func padRight(s string, w int) string {
	return s + strings.Repeat(" ", max(0, w-visibleWidth(s)))
}

// padAll pads every line to the widest one.
func padAll(lines []string) []string {
	w := 0
	for _, l := range lines {
		w = max(w, visibleWidth(l))
	}
	for i, l := range lines {
		lines[i] = padRight(l, w)
	}
	return lines
}

// visibleWidth counts the terminal columns of s outside ANSI escape sequences
// (ESC [ ... final byte in @..~).
func visibleWidth(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			i += 2
			for i < len(s) && (s[i] < '@' || s[i] > '~') {
				i++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n += cells(r)
	}
	return n
}

// cells is the number of terminal columns r takes: two for an East Asian
// wide or fullwidth character (a CJK ideograph, a kana, "。"), none for a
// combining mark, which joins the character before it, else one.
func cells(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	if unicode.In(r, unicode.Mn, unicode.Me) {
		return 0
	}
	return 1
}
