package render

import (
	"image"
	"image/color"
	"image/draw"
	"strconv"
	"unicode/utf8"

	"github.com/pkg/errors"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Pixel geometry of a PNG panel. Text is basicfont's 7x13 fixed face.
const (
	charW    = 7         // advance of one character
	lineH    = 13        // height of one text line
	ascent   = 11        // baseline offset inside a text line
	minCell  = 20        // smallest heatmap cell while the heatmap fits heatmapMax, px
	pad      = 12        // margin around everything in a panel
	barW     = 14        // colour scale bar width
	barGap   = 10        // between the heatmap (or the predictions) and the scale bar
	spacing  = 4         // between text lines and the heatmap
	barTicks = 3         // characters reserved for the bar's tick labels ("0.5")
	titleGap = 8         // between the title block and the key labels
	markW    = 2 * charW // the scored-row mark (">") and a space, left of a row label
	predGap  = 8         // between the heatmap and the predictions column
	// heatmapMax bounds a heatmap's side: past it cells shrink from their
	// labels' width (to 6 px at 160 tokens, a pixel past 960). Two panels
	// (at most about 1170 px with six-character labels, predictions and the
	// scale bar) then fit side by side in report's 2400 px, so a figure is
	// at most that wide and about 1100 px tall per two heads: GPT-2 small's
	// layer of 12 heads on 100 tokens is 2206 x 6063 px (13 M pixels),
	// where cells as wide as their labels made it 5003 x 58863 (294 M).
	// Toy tasks' 32 tokens with labels of up to three characters (27 px
	// cells, 864 px) stay as they were.
	heatmapMax = 960
	// gridMin is the smallest cell drawn with a white grid line: in a
	// smaller one the line would take a fifth or more of the colour.
	gridMin = 5
	// labelGap is the space a cell leaves beside its column label, and so
	// the least between two labels of a thinned axis.
	labelGap = 6
)

var (
	white  = color.RGBA{255, 255, 255, 255}
	ink    = color.RGBA{20, 20, 20, 255}
	grey   = color.RGBA{120, 120, 120, 255}
	masked = color.RGBA{228, 228, 228, 255}
	// sepInk draws the labels of separator positions.
	sepInk = color.RGBA{30, 90, 200, 255}
	right  = color.RGBA{0, 130, 60, 255}
	wrong  = color.RGBA{200, 30, 30, 255}
)

// Figure is a PNG: title lines over a grid of panels, Grid[layer][head].
// Each layer starts a new row of panels, and its heads wrap into as few rows
// as fit in MaxWidth pixels, spread evenly (0: one row per layer).
type Figure struct {
	Title    []string
	Grid     [][]Panel
	MaxWidth int
}

// FigureLegend explains the marks a PNG panel can carry.
const FigureLegend = "rows: queries, columns: keys, both numbered by position; > marks the scored rows; " +
	"SEP in blue; pred: the prediction at each position, green right, red wrong, grey not scored"

// Layout is the pixel geometry of a PNG figure: every panel has the same
// size.
type Layout struct {
	Layers, Heads int
	Cols          int         // panels per row
	T             int         // sequence length (heatmap cells per side)
	CellPx        int         // heatmap cell side, px
	Panel         image.Point // size of one panel, px
	TitleH        int         // height of the figure's title block, px
	title         []string    // the figure's title lines wrapped to its width
	titleLines    int
	colStep       int // every colStep-th column is labelled (1: all)
	rowStep       int // every rowStep-th row is labelled, and has its prediction drawn
	posW          int // the position numbers left of the rows
	rowLabelW     int
	predW         int // the predictions column; 0 when no panel has predictions
}

// rowsPerLayer is how many rows of panels one layer takes.
func (l Layout) rowsPerLayer() int { return (l.Heads + l.Cols - 1) / l.Cols }

// Size is the whole image's size.
func (l Layout) Size() image.Point {
	return image.Pt(l.Cols*l.Panel.X, l.TitleH+l.Layers*l.rowsPerLayer()*l.Panel.Y)
}

// PanelRect is the rectangle of panel (layer, head).
func (l Layout) PanelRect(layer, head int) image.Rectangle {
	row := layer*l.rowsPerLayer() + head/l.Cols
	at := image.Pt(head%l.Cols*l.Panel.X, l.TitleH+row*l.Panel.Y)
	return image.Rectangle{Min: at, Max: at.Add(l.Panel)}
}

// Heatmap is the rectangle of the heatmap cells of panel (layer, head).
func (l Layout) Heatmap(layer, head int) image.Rectangle {
	p := l.PanelRect(layer, head).Min
	at := p.Add(image.Pt(pad+l.posW+markW+l.rowLabelW, pad+titleGap+(l.titleLines+2)*(lineH+spacing)))
	return image.Rectangle{Min: at, Max: at.Add(image.Pt(l.T*l.CellPx, l.T*l.CellPx))}
}

// Cell is the rectangle of heatmap cell (query, key) of panel (layer, head).
func (l Layout) Cell(layer, head, query, key int) image.Rectangle {
	at := l.Heatmap(layer, head).Min.Add(image.Pt(key*l.CellPx, query*l.CellPx))
	return image.Rectangle{Min: at, Max: at.Add(image.Pt(l.CellPx, l.CellPx))}
}

// Prediction is the rectangle of the prediction of query row query.
func (l Layout) Prediction(layer, head, query int) image.Rectangle {
	hm := l.Heatmap(layer, head)
	at := image.Pt(hm.Max.X+predGap, hm.Min.Y+query*l.CellPx)
	return image.Rectangle{Min: at, Max: at.Add(image.Pt(l.predW, l.CellPx))}
}

// GridLayout measures a figure. Every panel must have the same T and every
// layer the same number of heads.
func GridLayout(f Figure) (Layout, error) { return gridLayout(f.shown()) }

// gridLayout measures a figure whose text is escaped.
func gridLayout(f Figure) (Layout, error) {
	grid := f.Grid
	if len(grid) == 0 || len(grid[0]) == 0 {
		return Layout{}, errors.New("png grid: no panels")
	}
	l := Layout{Layers: len(grid), Heads: len(grid[0]), T: len(grid[0][0].Weights), CellPx: minCell}
	textW, colChars := 0, 0
	for li, row := range grid {
		if len(row) != l.Heads {
			return Layout{}, errors.Errorf("png grid: layer %d has %d panels, layer 0 has %d", li, len(row), l.Heads)
		}
		for _, p := range row {
			if err := p.check(); err != nil {
				return Layout{}, err
			}
			if len(p.Weights) != l.T {
				return Layout{}, errors.Errorf("png grid: panel %q has T = %d, want %d", p.Title, len(p.Weights), l.T)
			}
			if err := p.checkMarks(); err != nil {
				return Layout{}, err
			}
			for _, c := range p.Cols {
				colChars = max(colChars, labelWidth(c))
			}
			for _, r := range p.Rows {
				l.rowLabelW = max(l.rowLabelW, labelWidth(r)*charW+6)
			}
			if p.Predicted != nil {
				l.predW = max(l.predW, len("pred")*charW)
				for _, s := range p.Predicted {
					l.predW = max(l.predW, labelWidth(s)*charW)
				}
			}
			l.titleLines = max(l.titleLines, 1+len(p.Notes))
			textW = max(textW, utf8.RuneCountInString(p.Title)*charW)
			for _, n := range p.Notes {
				textW = max(textW, utf8.RuneCountInString(n)*charW)
			}
		}
	}
	digits := len(strconv.Itoa(l.T - 1)) // of the position numbers over the columns
	l.sizeCells(max(colChars, digits))
	l.posW = digits*charW + 4
	mapW := l.posW + markW + l.rowLabelW + l.T*l.CellPx + barGap + barW + spacing + barTicks*charW
	if l.predW > 0 {
		mapW += predGap + l.predW
	}
	l.Panel = image.Pt(2*pad+max(mapW, textW), 2*pad+titleGap+(l.titleLines+2)*(lineH+spacing)+l.T*l.CellPx)
	l.Cols = l.Heads
	if f.MaxWidth > 0 {
		fit := max(1, min(l.Heads, f.MaxWidth/l.Panel.X))
		// As few rows as fit, then the heads spread evenly over them: 4
		// heads three to a row make 2 + 2, not 3 + 1.
		rows := (l.Heads + fit - 1) / fit
		l.Cols = (l.Heads + rows - 1) / rows
	}
	// The title wraps to the panels' width, which a short sequence or a
	// few heads make narrower than its lines.
	l.title = wrapLines(f.Title, (l.Cols*l.Panel.X-2*pad)/charW)
	if len(l.title) > 0 {
		l.TitleH = pad + len(l.title)*(lineH+spacing)
	}
	return l, nil
}

// wrapLines breaks each line longer than width characters at its spaces,
// the breaks as late as they can be; a word longer than width is cut.
func wrapLines(lines []string, width int) []string {
	width = max(width, 1)
	var out []string
	for _, line := range lines {
		rest := []rune(line)
		for len(rest) > width {
			cut := width
			for i := width; i > 0; i-- {
				if rest[i] == ' ' {
					cut = i
					break
				}
			}
			out = append(out, string(rest[:cut]))
			rest = rest[cut:]
			for len(rest) > 0 && rest[0] == ' ' {
				rest = rest[1:]
			}
		}
		out = append(out, string(rest))
	}
	return out
}

// sizeCells sizes the heatmap cells of a column label of up to chars
// characters: wide enough for the label while the heatmap fits heatmapMax,
// else shrunk to fit it (at least a pixel), the labels then drawn only every
// so many positions.
func (l *Layout) sizeCells(chars int) {
	need := chars*charW + labelGap
	l.CellPx = max(l.CellPx, need)
	if l.T*l.CellPx > heatmapMax {
		l.CellPx = max(1, heatmapMax/l.T)
	}
	l.colStep, l.rowStep = labelStep(need, l.CellPx), labelStep(lineH, l.CellPx)
}

// labelStep is how many positions apart labels of need px go on an axis of
// cells px cells: 1 when a cell holds one, else the first of 2, 5, 10, 20,
// 50, ... that is enough, so the labelled positions are round numbers.
func labelStep(need, cell int) int {
	k := (need + cell - 1) / cell
	for step := 1; ; step *= 10 {
		for _, s := range []int{step, 2 * step, 5 * step} {
			if s >= k {
				return s
			}
		}
	}
}

// checkMarks checks the optional per-position slices against T.
func (p Panel) checkMarks() error {
	t := len(p.Weights)
	for _, m := range []struct {
		name string
		n    int
	}{{"scored", len(p.Scored)}, {"separator", len(p.Separator)}, {"predicted", len(p.Predicted)}, {"correct", len(p.Correct)}} {
		if m.n != 0 && m.n != t {
			return errors.Errorf("panel %q: %d %s marks for %d positions", p.Title, m.n, m.name, t)
		}
	}
	return nil
}

// Grid draws a figure: its title lines, then per panel its title and notes,
// position numbers and key labels above the heatmap, position numbers, the
// scored-row mark and query labels to its left, the predictions and a
// colour scale bar to its right.
func Grid(f Figure) (*image.RGBA, Layout, error) {
	f = f.shown()
	l, err := gridLayout(f)
	if err != nil {
		return nil, Layout{}, err
	}
	img := image.NewRGBA(image.Rectangle{Max: l.Size()})
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	for i, s := range l.title {
		text(img, image.Pt(pad, pad+i*(lineH+spacing)), s, ink)
	}
	for li, row := range f.Grid {
		for hi, p := range row {
			drawPanel(img, l, li, hi, p)
		}
	}
	return img, l, nil
}

// at reports marks[i], false when marks is nil.
func at(marks []bool, i int) bool { return marks != nil && marks[i] }

// drawPanel draws panel (layer, head): its title and notes, labels, cells,
// predictions and scale bar.
func drawPanel(img *image.RGBA, l Layout, layer, head int, p Panel) {
	origin := l.PanelRect(layer, head).Min.Add(image.Pt(pad, pad))
	for i, s := range append([]string{p.Title}, p.Notes...) {
		text(img, origin.Add(image.Pt(0, i*(lineH+spacing))), s, ink)
	}
	hm := l.Heatmap(layer, head)
	drawColumnLabels(img, l, hm, p)
	drawRowLabels(img, l, hm, p)
	for i, row := range p.Weights {
		for j, v := range row {
			c := Color(v)
			if p.Masked(i, j) {
				c = masked
			}
			// a 1px white grid line keeps neighbouring cells apart
			r := l.Cell(layer, head, i, j)
			if l.CellPx >= gridMin {
				r.Max = r.Max.Sub(image.Pt(1, 1))
			}
			draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
		}
	}
	barLeft := hm.Max.X + barGap
	if p.Predicted != nil {
		drawPredictions(img, l, layer, head, p)
	}
	if l.predW > 0 {
		barLeft += predGap + l.predW
	}
	drawScaleBar(img, image.Rect(barLeft, hm.Min.Y, barLeft+barW, hm.Max.Y))
}

// labelInk is the colour of position i's labels: blue for a separator.
func (p Panel) labelInk(i int) color.RGBA {
	if at(p.Separator, i) {
		return sepInk
	}
	return ink
}

// drawColumnLabels draws the position numbers and key labels of every
// colStep-th column over heatmap hm.
func drawColumnLabels(img *image.RGBA, l Layout, hm image.Rectangle, p Panel) {
	for j, c := range p.Cols {
		if j%l.colStep != 0 {
			continue
		}
		x := hm.Min.X + j*l.CellPx
		overColumn(img, strconv.Itoa(j), x, hm.Min.Y-2*(lineH+spacing), l.CellPx, hm.Max.X, grey)
		overColumn(img, cut(c), x, hm.Min.Y-lineH-spacing, l.CellPx, hm.Max.X, p.labelInk(j))
	}
}

// overColumn draws s at height y centred over the cell px wide column at x,
// unless a thinned axis's label would then run past right, the heatmap's
// edge, into the predictions' header.
func overColumn(img *image.RGBA, s string, x, y, cell, right int, c color.RGBA) {
	w := utf8.RuneCountInString(s) * charW
	at := x + (cell-w)/2
	if at+w > right {
		return
	}
	text(img, image.Pt(at, y), s, c)
}

// drawRowLabels draws the position numbers and query labels of every
// rowStep-th row left of heatmap hm, and the scored-row mark of every row,
// cut to its row when rows are lower than a line of text.
func drawRowLabels(img *image.RGBA, l Layout, hm image.Rectangle, p Panel) {
	left := hm.Min.X - l.rowLabelW - markW - l.posW
	for i, r := range p.Rows {
		top := hm.Min.Y + i*l.CellPx
		y := top + (l.CellPx-lineH)/2
		if at(p.Scored, i) {
			row := image.Rect(left+l.posW, top, left+l.posW+markW, top+l.CellPx)
			text(img.SubImage(row).(*image.RGBA), image.Pt(left+l.posW+1, y), ">", ink)
		}
		if i%l.rowStep != 0 {
			continue
		}
		r = cut(r)
		pos := strconv.Itoa(i)
		text(img, image.Pt(left+l.posW-4-len(pos)*charW, y), pos, grey)
		text(img, image.Pt(hm.Min.X-labelWidth(r)*charW-4, y), r, p.labelInk(i))
	}
}

// drawPredictions draws the predictions column's header and the prediction
// of every rowStep-th row, green right, red wrong, grey not scored.
func drawPredictions(img *image.RGBA, l Layout, layer, head int, p Panel) {
	hm := l.Heatmap(layer, head)
	text(img, image.Pt(hm.Max.X+predGap, hm.Min.Y-lineH-spacing), "pred", grey)
	for i, s := range p.Predicted {
		if i%l.rowStep != 0 {
			continue
		}
		c := grey
		if at(p.Scored, i) {
			c = wrong
			if at(p.Correct, i) {
				c = right
			}
		}
		r := l.Prediction(layer, head, i)
		text(img, image.Pt(r.Min.X, r.Min.Y+(l.CellPx-lineH)/2), cut(s), c)
	}
}

// drawScaleBar draws the colour scale in bar, 1 at the top, with its ticks.
func drawScaleBar(img *image.RGBA, bar image.Rectangle) {
	for y := bar.Min.Y; y < bar.Max.Y; y++ {
		v := 1 - float64(y-bar.Min.Y)/float64(max(1, bar.Dy()-1))
		draw.Draw(img, image.Rect(bar.Min.X, y, bar.Max.X, y+1), image.NewUniform(Color(v)), image.Point{}, draw.Src)
	}
	tx := bar.Max.X + spacing
	text(img, image.Pt(tx, bar.Min.Y), "1", ink)
	text(img, image.Pt(tx, bar.Min.Y+(bar.Dy()-lineH)/2), "0.5", ink)
	text(img, image.Pt(tx, bar.Max.Y-lineH), "0", ink)
}

// text draws s in colour c with its top-left corner at p.
func text(img *image.RGBA, p image.Point, s string, c color.RGBA) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(p.X, p.Y+ascent)}
	d.DrawString(s)
}
