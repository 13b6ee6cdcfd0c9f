package render

import (
	"image"
	"image/color"
	"strings"
	"testing"
)

// TestSparkline pins sparklines by hand: a ramp fills the eight blocks in
// order; a column with no point repeats the one before (so curves logged
// at different steps line up), and columns before the first point are
// blank; a column shows the mean of its points; values past the scale
// clamp to its ends.
func TestSparkline(t *testing.T) {
	for _, c := range []struct {
		name   string
		xs, ys []float64
		x0, x1 float64
		width  int
		lo, hi float64
		want   string
	}{
		{"ramp", []float64{0, 1, 2, 3, 4, 5, 6, 7}, []float64{0, 1, 2, 3, 4, 5, 6, 7}, 0, 7.5, 8, 0, 7, "▁▂▃▄▅▆▇█"},
		{"carried", []float64{0, 10}, []float64{0, 1}, 0, 10, 5, 0, 1, "▁▁▁▁█"},
		{"blank before the first point and after the last", []float64{5}, []float64{1}, 0, 10, 4, 0, 1, "  █ "},
		{"a run that ends early", []float64{0, 2}, []float64{1, 1}, 0, 10, 5, 0, 1, "██   "},
		{"mean of a column", []float64{0, 1, 2, 3}, []float64{0, 1, 1, 1}, 0, 4, 2, 0, 1, "▅█"},
		{"clamped", []float64{0, 1}, []float64{-5, 5}, 0, 2, 2, 0, 1, "▁█"},
		{"flat scale", []float64{0, 1}, []float64{3, 3}, 0, 2, 2, 3, 3, "▁▁"},
	} {
		if got := Sparkline(c.xs, c.ys, c.x0, c.x1, c.width, c.lo, c.hi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestChart: each series is drawn through the pixels of its points in its
// colour, a value above the range at the plot's top row, a guide line in
// grey; every bad input is one error.
func TestChart(t *testing.T) {
	red, blue := color.RGBA{200, 0, 0, 255}, color.RGBA{0, 0, 200, 255}
	panels := []ChartPanel{
		{Title: "loss", YMin: 0, YMax: 4, Series: []Series{{Name: "train", X: []float64{0, 50, 100}, Y: []float64{4, 2, 9}, Color: red}}},
		{Title: "roles", YMin: 0, YMax: 1, Guides: []float64{0.5}, Series: []Series{{Name: "L1 H3", X: []float64{0, 100}, Y: []float64{0, 1}, Color: blue}}},
	}
	img, l, err := Chart([]string{"run"}, "step", 0, 100, panels)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Plots) != 2 || l.Plots[1].Min.Y <= l.Plots[0].Max.Y {
		t.Fatalf("plots %v, want two stacked", l.Plots)
	}
	for _, c := range []struct {
		panel int
		x, y  float64
		want  color.RGBA
	}{
		{0, 0, 4, red}, {0, 50, 2, red}, {0, 25, 3, red}, {0, 100, 4, red}, // 9 is clamped to 4
		{1, 0, 0, blue}, {1, 50, 0.5, blue}, {1, 100, 1, blue}, {1, 10, 0.5, masked},
	} {
		p := l.Point(c.panel, panels[c.panel].YMin, panels[c.panel].YMax, c.x, c.y)
		if got := img.RGBAAt(p.X, p.Y); got != c.want {
			t.Errorf("panel %d (%v, %v) at pixel %v: %v, want %v", c.panel, c.x, c.y, p, got, c.want)
		}
	}
	if top := l.Point(0, 0, 4, 100, 9); top.Y != l.Plots[0].Min.Y {
		t.Errorf("a value above the range at y %d, want the top row %d", top.Y, l.Plots[0].Min.Y)
	}
	for _, c := range []struct {
		name   string
		x0, x1 float64
		panels []ChartPanel
		want   string
	}{
		{"empty x", 5, 5, panels, "x axis [5, 5] is empty"},
		{"no panels", 0, 1, nil, "no panels"},
		{"empty y", 0, 1, []ChartPanel{{Title: "p", YMin: 1, YMax: 1}}, "chart panel 0 (p): y range [1, 1] is empty"},
		{"ragged", 0, 1, []ChartPanel{{YMin: 0, YMax: 1, Series: []Series{{Name: "s", X: []float64{0}, Y: []float64{0, 1}}}}}, `series "s": 1 x values for 2 y values`},
	} {
		if _, _, err := Chart(nil, "step", c.x0, c.x1, c.panels); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestRoundMiddle: the middle tick of the step axis is a round number.
func TestRoundMiddle(t *testing.T) {
	for _, c := range []struct{ x0, x1, want float64 }{{10, 3000, 1500}, {10, 400, 200}, {1, 11, 5}, {100, 1000, 550}} {
		if got := roundMiddle(c.x0, c.x1); got != c.want {
			t.Errorf("roundMiddle(%v, %v) = %v, want %v", c.x0, c.x1, got, c.want)
		}
	}
}

// TestChartClampsPoints: a point outside the x axis lands on the plot's
// edge, so a stray step cannot send a line thousands of pixels away.
func TestChartClampsPoints(t *testing.T) {
	l := ChartLayout{X0: 1, X1: 2, Plots: []image.Rectangle{image.Rect(10, 10, 110, 60)}}
	if p := l.Point(0, 0, 1, 1e18, 0.5); p.X != 109 {
		t.Errorf("x = 1e18 at %v, want the right edge 109", p)
	}
	if p := l.Point(0, 0, 1, -1e18, 0.5); p.X != 10 {
		t.Errorf("x = -1e18 at %v, want the left edge 10", p)
	}
}
