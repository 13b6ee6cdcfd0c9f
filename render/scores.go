package render

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"
	"unicode/utf8"

	"github.com/pkg/errors"
)

// ScoreTable is a table of numbers drawn as coloured cells: one row per
// item (a head), one column per measure, each cell coloured by its value
// scaled into [0, 1] by its column's Lo and Hi and printed on it.
type ScoreTable struct {
	Title   []string
	Rows    []string // row labels
	Columns []ScoreColumn
	Values  [][]float64 // [row][column]
}

// ScoreColumn is one measure of a ScoreTable: its header, the value range
// its colour spans and the format of its numbers.
type ScoreColumn struct {
	Name   string
	Lo, Hi float64
	Format string // fmt verb for the value, "%.2f" when empty
}

// Score-table geometry.
const (
	scoreCellW = 10 * charW
	scoreCellH = lineH + 8
)

// Scores draws t.
func Scores(t ScoreTable) (*image.RGBA, error) {
	t = t.shown()
	if len(t.Values) != len(t.Rows) {
		return nil, errors.Errorf("score table: %d rows of values for %d labels", len(t.Values), len(t.Rows))
	}
	for i, row := range t.Values {
		if len(row) != len(t.Columns) {
			return nil, errors.Errorf("score table: row %d has %d values for %d columns", i, len(row), len(t.Columns))
		}
	}
	labelW := 0
	for _, r := range t.Rows {
		labelW = max(labelW, utf8.RuneCountInString(r)*charW)
	}
	cellW := scoreCellW
	for _, c := range t.Columns {
		cellW = max(cellW, (utf8.RuneCountInString(c.Name)+1)*charW)
	}
	titleH := len(t.Title) * (lineH + spacing)
	w := pad + labelW + charW + len(t.Columns)*cellW + pad
	for _, line := range t.Title {
		w = max(w, 2*pad+utf8.RuneCountInString(line)*charW)
	}
	h := pad + titleH + scoreCellH + len(t.Rows)*scoreCellH + pad
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	for i, line := range t.Title {
		text(img, image.Pt(pad, pad+i*(lineH+spacing)), line, ink)
	}
	x0, y0 := pad+labelW+charW, pad+titleH
	for j, c := range t.Columns {
		text(img, image.Pt(x0+j*cellW+charW/2, y0+(scoreCellH-lineH)/2), c.Name, ink)
	}
	for i, label := range t.Rows {
		y := y0 + (i+1)*scoreCellH
		text(img, image.Pt(pad, y+(scoreCellH-lineH)/2), label, ink)
		for j, c := range t.Columns {
			v := t.Values[i][j]
			cell := image.Rect(x0+j*cellW, y, x0+(j+1)*cellW-2, y+scoreCellH-2)
			scaled := 0.0
			if c.Hi > c.Lo {
				scaled = (v - c.Lo) / (c.Hi - c.Lo)
			}
			fill, label := Color(scaled), ""
			format := c.Format
			if format == "" {
				format = "%.2f"
			}
			if math.IsNaN(v) { // not measured (a head not picked)
				fill, label = notMeasured, "-"
			} else {
				label = fmt.Sprintf(format, v)
			}
			draw.Draw(img, cell, image.NewUniform(fill), image.Point{}, draw.Src)
			text(img, image.Pt(cell.Min.X+charW/2, cell.Min.Y+(scoreCellH-2-lineH)/2), label, contrast(fill))
		}
	}
	return img, nil
}

// notMeasured is the fill of a cell with no value.
var notMeasured = color.RGBA{0xe8, 0xe8, 0xe8, 0xff}

// contrast is black or white, whichever reads better on c.
func contrast(c color.RGBA) color.RGBA {
	if 299*int(c.R)+587*int(c.G)+114*int(c.B) > 128*1000 {
		return ink
	}
	return white
}

// Stack draws the images one under the other on white, left-aligned.
func Stack(imgs ...image.Image) *image.RGBA {
	w, h := 0, 0
	for _, im := range imgs {
		w, h = max(w, im.Bounds().Dx()), h+im.Bounds().Dy()
	}
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(out, out.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	y := 0
	for _, im := range imgs {
		b := im.Bounds()
		draw.Draw(out, image.Rect(0, y, b.Dx(), y+b.Dy()), im, b.Min, draw.Src)
		y += b.Dy()
	}
	return out
}
