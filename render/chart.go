package render

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/escape"
)

// sparkBlocks are the eight heights of a sparkline column, lowest first.
var sparkBlocks = []rune("▁▂▃▄▅▆▇█")

// Sparkline draws ys over xs (sorted ascending) as width block characters
// on the x axis [x0, x1]: column c covers [x0 + c·dx, x0 + (c+1)·dx) with
// dx = (x1 − x0)/width, the last column includes x1, and shows the mean of
// the points in it, lo as the lowest block and hi (or more) as the highest.
// A column with no point repeats the one before it, or is a space before
// the first point or after the last, so curves logged at different steps,
// and runs of different lengths, line up by step.
func Sparkline(xs, ys []float64, x0, x1 float64, width int, lo, hi float64) string {
	var b strings.Builder
	prev := ' '
	i := 0
	for c := range width {
		start, end := x0+(x1-x0)*float64(c)/float64(width), x0+(x1-x0)*float64(c+1)/float64(width)
		if len(xs) > 0 && start > xs[len(xs)-1] {
			prev = ' '
		}
		var sum float64
		n := 0
		for ; i < len(xs) && (xs[i] < end || c == width-1); i++ {
			if xs[i] >= x0 {
				sum, n = sum+ys[i], n+1
			}
		}
		if n > 0 {
			prev = sparkBlock(sum/float64(n), lo, hi)
		}
		b.WriteRune(prev)
	}
	return b.String()
}

// sparkBlock is the block character of v on the scale [lo, hi].
func sparkBlock(v, lo, hi float64) rune {
	if !(hi > lo) {
		return sparkBlocks[0]
	}
	k := int(math.Round((v - lo) / (hi - lo) * float64(len(sparkBlocks)-1)))
	return sparkBlocks[max(0, min(len(sparkBlocks)-1, k))]
}

// Series is one line of a chart panel: Y[i] at X[i], X ascending.
type Series struct {
	Name  string
	X, Y  []float64
	Color color.RGBA
}

// ChartPanel is one plot of a Chart: a title, the y range shown (values
// outside are clamped to it), optional horizontal guide lines, and lines.
type ChartPanel struct {
	Title      string
	YMin, YMax float64
	Guides     []float64 // y values drawn as thin grey lines (a threshold)
	Series     []Series
}

// Chart pixel geometry.
const (
	chartPlotW  = 720 // plot area width
	chartPlotH  = 200 // plot area height
	chartLeft   = 7 * charW
	chartSwatch = 16 // legend colour swatch width
)

// Palette is a set of distinguishable line colours for a chart's series.
var Palette = []color.RGBA{
	{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
	{255, 127, 14, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {23, 190, 207, 255},
	{188, 189, 34, 255}, {127, 127, 127, 255},
}

// ChartLayout is where a Chart put each panel's plot area, for tests and
// callers that annotate the image.
type ChartLayout struct {
	X0, X1 float64           // the x axis every panel shares
	Plots  []image.Rectangle // one plot area per panel
}

// Point is the pixel of (x, y) in panel p's plot area.
func (l ChartLayout) Point(p int, yMin, yMax, x, y float64) image.Point {
	r := l.Plots[p]
	fx := math.Max(0, math.Min(1, (x-l.X0)/(l.X1-l.X0))) // clamped: a point off the axis stays on the plot's edge
	fy := (math.Max(yMin, math.Min(yMax, y)) - yMin) / (yMax - yMin)
	return image.Pt(r.Min.X+int(math.Round(fx*float64(r.Dx()-1))), r.Max.Y-1-int(math.Round(fy*float64(r.Dy()-1))))
}

// Chart draws title lines over panels stacked vertically on the shared x
// axis [x0, x1] (numbered at its two ends and a round number near its
// middle, the first number
// after xLabel), each
// with its title, its y range at the left, and a legend line per series.
func Chart(title []string, xLabel string, x0, x1 float64, panels []ChartPanel) (*image.RGBA, ChartLayout, error) {
	title, xLabel, panels = escape.Labels(title), escape.Label(xLabel), shownCharts(panels)
	if !(x1 > x0) || math.IsInf(x1-x0, 0) {
		return nil, ChartLayout{}, errors.Errorf("chart: x axis [%v, %v] is empty", x0, x1)
	}
	if len(panels) == 0 {
		return nil, ChartLayout{}, errors.New("chart: no panels")
	}
	for i, p := range panels {
		if !(p.YMax > p.YMin) || math.IsInf(p.YMax-p.YMin, 0) {
			return nil, ChartLayout{}, errors.Errorf("chart panel %d (%s): y range [%v, %v] is empty", i, p.Title, p.YMin, p.YMax)
		}
		for _, s := range p.Series {
			if len(s.X) != len(s.Y) {
				return nil, ChartLayout{}, errors.Errorf("chart panel %d series %q: %d x values for %d y values", i, s.Name, len(s.X), len(s.Y))
			}
			for k, y := range s.Y {
				if math.IsNaN(y) || math.IsNaN(s.X[k]) {
					return nil, ChartLayout{}, errors.Errorf("chart panel %d series %q: point %d is NaN", i, s.Name, k)
				}
			}
		}
	}
	l := ChartLayout{X0: x0, X1: x1}
	y := pad + len(title)*(lineH+spacing)
	for _, p := range panels {
		y += lineH + spacing // the panel's title
		l.Plots = append(l.Plots, image.Rect(pad+chartLeft, y, pad+chartLeft+chartPlotW, y+chartPlotH))
		y += chartPlotH + spacing + lineH + spacing // the plot, the x numbers
		y += len(p.Series)*(lineH+2) + pad          // the legend
	}
	img := image.NewRGBA(image.Rect(0, 0, pad+chartLeft+chartPlotW+pad, y))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	for i, s := range title {
		text(img, image.Pt(pad, pad+i*(lineH+spacing)), s, ink)
	}
	for i, p := range panels {
		drawChartPanel(img, l, i, p, xLabel)
	}
	return img, l, nil
}

// roundMiddle is the multiple of a round step (5·10^k, a tenth to a
// twentieth of the span) nearest the middle of [x0, x1]: 1500 rather than
// 1505 on the axis 10..3000.
func roundMiddle(x0, x1 float64) float64 {
	step := 5 * math.Pow(10, math.Floor(math.Log10(x1-x0))-1)
	return math.Round((x0+x1)/2/step) * step
}

func drawChartPanel(img *image.RGBA, l ChartLayout, i int, p ChartPanel, xLabel string) {
	r := l.Plots[i]
	text(img, image.Pt(pad, r.Min.Y-lineH-spacing), p.Title, ink)
	for _, g := range p.Guides {
		a, b := l.Point(i, p.YMin, p.YMax, l.X0, g), l.Point(i, p.YMin, p.YMax, l.X1, g)
		line(img, a, b, masked)
	}
	// The frame: left and bottom axes.
	line(img, image.Pt(r.Min.X-1, r.Min.Y), image.Pt(r.Min.X-1, r.Max.Y), grey)
	line(img, image.Pt(r.Min.X-1, r.Max.Y), image.Pt(r.Max.X, r.Max.Y), grey)
	for _, v := range []float64{p.YMax, p.YMin} {
		s := formatTick(v)
		at := l.Point(i, p.YMin, p.YMax, l.X0, v)
		text(img, image.Pt(r.Min.X-spacing-len(s)*charW, min(max(at.Y-lineH/2, r.Min.Y), r.Max.Y-lineH)), s, ink)
	}
	for k, v := range []float64{l.X0, roundMiddle(l.X0, l.X1), l.X1} {
		s := formatTick(v)
		if k == 0 {
			s = xLabel + " " + s
		}
		at := l.Point(i, p.YMin, p.YMax, v, p.YMin)
		x := []int{at.X, at.X - len(s)*charW/2, at.X - len(s)*charW}[k]
		text(img, image.Pt(x, r.Max.Y+spacing), s, grey)
	}
	legendY := r.Max.Y + spacing + lineH + spacing
	for k, s := range p.Series {
		for j := 1; j < len(s.X); j++ {
			line(img, l.Point(i, p.YMin, p.YMax, s.X[j-1], s.Y[j-1]), l.Point(i, p.YMin, p.YMax, s.X[j], s.Y[j]), s.Color)
		}
		if len(s.X) == 1 {
			img.SetRGBA(l.Point(i, p.YMin, p.YMax, s.X[0], s.Y[0]).X, l.Point(i, p.YMin, p.YMax, s.X[0], s.Y[0]).Y, s.Color)
		}
		ly := legendY + k*(lineH+2)
		draw.Draw(img, image.Rect(r.Min.X, ly+lineH/2-1, r.Min.X+chartSwatch, ly+lineH/2+2), image.NewUniform(s.Color), image.Point{}, draw.Src)
		text(img, image.Pt(r.Min.X+chartSwatch+spacing, ly), s.Name, ink)
	}
}

// formatTick prints an axis number short: an integer as such, else 3
// significant digits.
func formatTick(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e9 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// line draws a one-pixel line from a to b (Bresenham), both ends included.
func line(img *image.RGBA, a, b image.Point, c color.RGBA) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := 1, 1
	if a.X > b.X {
		sx = -1
	}
	if a.Y > b.Y {
		sy = -1
	}
	e := dx + dy
	for {
		img.SetRGBA(a.X, a.Y, c)
		if a == b {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			a.X += sx
		}
		if e2 <= dx {
			e += dx
			a.Y += sy
		}
	}
}
