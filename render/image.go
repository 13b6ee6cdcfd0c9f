package render

import (
	"image"
	"image/color"
	"image/draw"
	"unicode/utf8"

	"github.com/pkg/errors"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Pixel geometry of a PNG panel. Text is basicfont's 7x13 fixed face.
const (
	charW    = 7  // advance of one character
	lineH    = 13 // height of one text line
	ascent   = 11 // baseline offset inside a text line
	minCell  = 20 // smallest heatmap cell, px
	pad      = 12 // margin around everything in a panel
	barW     = 14 // colour scale bar width
	barGap   = 10 // between the heatmap and the scale bar
	spacing  = 4  // between text lines and the heatmap
	barTicks = 3  // characters reserved for the bar's tick labels ("0.5")
	titleGap = 8  // between the title block and the key labels
)

var (
	white  = color.RGBA{255, 255, 255, 255}
	ink    = color.RGBA{20, 20, 20, 255}
	masked = color.RGBA{228, 228, 228, 255}
)

// Layout is the pixel geometry of a PNG grid: every panel has the same size.
type Layout struct {
	Layers, Heads int
	T             int         // sequence length (heatmap cells per side)
	CellPx        int         // heatmap cell side, px
	Panel         image.Point // size of one panel, px
	titleLines    int
	rowLabelW     int
}

// Size is the whole image's size: Heads panels across, Layers down.
func (l Layout) Size() image.Point { return image.Pt(l.Heads*l.Panel.X, l.Layers*l.Panel.Y) }

// PanelRect is the rectangle of panel (layer, head).
func (l Layout) PanelRect(layer, head int) image.Rectangle {
	at := image.Pt(head*l.Panel.X, layer*l.Panel.Y)
	return image.Rectangle{Min: at, Max: at.Add(l.Panel)}
}

// Heatmap is the rectangle of the heatmap cells of panel (layer, head).
func (l Layout) Heatmap(layer, head int) image.Rectangle {
	p := l.PanelRect(layer, head).Min
	at := p.Add(image.Pt(pad+l.rowLabelW, pad+titleGap+(l.titleLines+1)*(lineH+spacing)))
	return image.Rectangle{Min: at, Max: at.Add(image.Pt(l.T*l.CellPx, l.T*l.CellPx))}
}

// Cell is the rectangle of heatmap cell (query, key) of panel (layer, head).
func (l Layout) Cell(layer, head, query, key int) image.Rectangle {
	at := l.Heatmap(layer, head).Min.Add(image.Pt(key*l.CellPx, query*l.CellPx))
	return image.Rectangle{Min: at, Max: at.Add(image.Pt(l.CellPx, l.CellPx))}
}

// GridLayout measures a grid of panels, grid[layer][head]. Every panel must
// have the same T and every layer the same number of heads.
func GridLayout(grid [][]Panel) (Layout, error) {
	if len(grid) == 0 || len(grid[0]) == 0 {
		return Layout{}, errors.New("png grid: no panels")
	}
	l := Layout{Layers: len(grid), Heads: len(grid[0]), T: len(grid[0][0].Weights), CellPx: minCell}
	textW := 0
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
			for _, c := range p.Cols {
				l.CellPx = max(l.CellPx, labelWidth(c)*charW+6)
			}
			for _, r := range p.Rows {
				l.rowLabelW = max(l.rowLabelW, labelWidth(r)*charW+6)
			}
			l.titleLines = max(l.titleLines, 1+len(p.Notes))
			textW = max(textW, utf8.RuneCountInString(p.Title)*charW)
			for _, n := range p.Notes {
				textW = max(textW, utf8.RuneCountInString(n)*charW)
			}
		}
	}
	mapW := l.rowLabelW + l.T*l.CellPx + barGap + barW + spacing + barTicks*charW
	l.Panel = image.Pt(2*pad+max(mapW, textW), 2*pad+titleGap+(l.titleLines+1)*(lineH+spacing)+l.T*l.CellPx)
	return l, nil
}

// Grid draws grid[layer][head] as one image: per panel its title and notes,
// key labels above the heatmap, query labels to its left, and a colour scale
// bar to its right.
func Grid(grid [][]Panel) (*image.RGBA, Layout, error) {
	l, err := GridLayout(grid)
	if err != nil {
		return nil, Layout{}, err
	}
	img := image.NewRGBA(image.Rectangle{Max: l.Size()})
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	for li, row := range grid {
		for hi, p := range row {
			drawPanel(img, l, li, hi, p)
		}
	}
	return img, l, nil
}

func drawPanel(img *image.RGBA, l Layout, layer, head int, p Panel) {
	origin := l.PanelRect(layer, head).Min.Add(image.Pt(pad, pad))
	for i, s := range append([]string{p.Title}, p.Notes...) {
		text(img, origin.Add(image.Pt(0, i*(lineH+spacing))), s)
	}
	hm := l.Heatmap(layer, head)
	for j, c := range p.Cols {
		c = cut(c)
		x := hm.Min.X + j*l.CellPx + (l.CellPx-labelWidth(c)*charW)/2
		text(img, image.Pt(x, hm.Min.Y-lineH-spacing), c)
	}
	for i, r := range p.Rows {
		r = cut(r)
		x := hm.Min.X - labelWidth(r)*charW - 4
		text(img, image.Pt(x, hm.Min.Y+i*l.CellPx+(l.CellPx-lineH)/2), r)
	}
	for i, row := range p.Weights {
		for j, v := range row {
			c := Color(v)
			if p.Causal && j > i {
				c = masked
			}
			// a 1px white grid line keeps neighbouring cells apart
			r := l.Cell(layer, head, i, j)
			r.Max = r.Max.Sub(image.Pt(1, 1))
			draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
		}
	}
	bar := image.Rect(hm.Max.X+barGap, hm.Min.Y, hm.Max.X+barGap+barW, hm.Max.Y)
	for y := bar.Min.Y; y < bar.Max.Y; y++ {
		v := 1 - float64(y-bar.Min.Y)/float64(max(1, bar.Dy()-1))
		draw.Draw(img, image.Rect(bar.Min.X, y, bar.Max.X, y+1), image.NewUniform(Color(v)), image.Point{}, draw.Src)
	}
	tx := bar.Max.X + spacing
	text(img, image.Pt(tx, bar.Min.Y), "1")
	text(img, image.Pt(tx, bar.Min.Y+(bar.Dy()-lineH)/2), "0.5")
	text(img, image.Pt(tx, bar.Max.Y-lineH), "0")
}

// text draws s with its top-left corner at p.
func text(img *image.RGBA, p image.Point, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(ink), Face: basicfont.Face7x13, Dot: fixed.P(p.X, p.Y+ascent)}
	d.DrawString(s)
}
