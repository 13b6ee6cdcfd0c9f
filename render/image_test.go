package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/attnscope/attnscope/internal/golden"
)

// markedPanel is head h of a causal model on len(labels) tokens with every
// mark a task draws: query i reads key i-1-h (clamped at 0) with weight 0.75
// and itself with the rest, the second half of the rows is scored, position
// 0 is the separator, and every third prediction is wrong.
func markedPanel(h int, labels []string) Panel {
	t := len(labels)
	p := Panel{Title: fmt.Sprintf("layer 0 head %d", h), Rows: labels, Cols: labels, Causal: true, Notes: []string{"previous-token (0.75)"},
		Weights: make([][]float64, t), Scored: make([]bool, t), Separator: make([]bool, t), Predicted: make([]string, t), Correct: make([]bool, t)}
	for i := range t {
		p.Weights[i] = make([]float64, t)
		p.Weights[i][max(0, i-1-h)] += 0.75
		p.Weights[i][i] += 0.25
		p.Scored[i] = i >= t/2
		p.Predicted[i] = labels[(i+1)%t]
		p.Correct[i] = i%3 != 0
	}
	p.Separator[0] = true
	return p
}

// markedFigure is heads markedPanels on labels, one layer, under a title,
// at report's width (2400 px).
func markedFigure(heads int, labels []string) Figure {
	f := Figure{Title: []string{"a title", FigureLegend}, MaxWidth: 2400, Grid: [][]Panel{nil}}
	for h := range heads {
		f.Grid[0] = append(f.Grid[0], markedPanel(h, labels))
	}
	return f
}

// numbered is t labels: "SEP" then the positions' numbers, the labels of a
// toy task (at most three characters).
func numbered(t int) []string {
	labels := []string{"SEP"}
	for i := 1; i < t; i++ {
		labels = append(labels, strconv.Itoa(i%100))
	}
	return labels
}

// TestFigureGolden pins the pixels of short figures, drawn the way they
// were before long sequences had their own layout: the fixture's two layers
// with every mark, and 32 tokens of a toy task, the longest a toy task
// draws, in three heads that wrap into rows. The files were checked by eye;
// -update rewrites them.
func TestFigureGolden(t *testing.T) {
	marked := fixture()
	marked[0] = markedPanel(0, labels)
	for _, c := range []struct {
		name string
		f    Figure
	}{
		{"figure-5.png", Figure{Title: []string{"a title", FigureLegend}, Grid: [][]Panel{marked, marked}}},
		{"figure-32.png", markedFigure(3, numbered(32))},
	} {
		img, _, err := Grid(c.f)
		if err != nil {
			t.Fatal(err)
		}
		checkPNGGolden(t, c.name, img)
	}
}

// checkPNGGolden compares img's pixels with testdata/name, or rewrites that
// file under -update.
func checkPNGGolden(t *testing.T, name string, img *image.RGBA) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *golden.Update {
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (go test -update in the package's folder creates it)", err)
	}
	defer f.Close()
	want, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if want.Bounds() != img.Bounds() {
		t.Fatalf("%s: image %v, golden %v (-update rewrites it)", name, img.Bounds(), want.Bounds())
	}
	differ, first := 0, image.Point{}
	for y := range img.Bounds().Dy() {
		for x := range img.Bounds().Dx() {
			if color.RGBAModel.Convert(want.At(x, y)) != color.Color(img.RGBAAt(x, y)) {
				if differ == 0 {
					first = image.Pt(x, y)
				}
				differ++
			}
		}
	}
	if differ > 0 {
		t.Errorf("%s: %d pixels differ from the golden, the first at %v (-update rewrites it)", name, differ, first)
	}
}

// TestLongFigureBounded: 12 heads on 101 tokens (GPT-2 small's layer on its
// 100-token repeated-tokens example, and a three-digit position) and on
// 240, with six-character labels, at report's 2400 px, shrink their cells
// to the largest whose heatmap fits heatmapMax, sit two to a row within the
// width, draw the grid line only in cells of gridMin px or more, and label
// every colStep-th column and rowStep-th row legibly (checkColumnLabels,
// checkRowLabels).
func TestLongFigureBounded(t *testing.T) {
	for _, tokens := range []int{101, 240} {
		var long []string
		for i := range tokens {
			long = append(long, fmt.Sprintf("tok%03d", i))
		}
		f := markedFigure(12, long)
		img, l, err := Grid(f)
		if err != nil {
			t.Fatal(err)
		}
		side := l.T * l.CellPx
		if side > heatmapMax || side+l.T <= heatmapMax || l.Cols < 2 || img.Bounds().Dx() > f.MaxWidth || l.Panel.Y > side+10*lineH {
			t.Fatalf("%d tokens: image %v, %d panels of %v to a row, heatmap %d px of %d px cells; want at most %d px wide, heatmaps of the largest cells within %d px",
				tokens, img.Bounds().Size(), l.Cols, l.Panel, side, l.CellPx, f.MaxWidth, heatmapMax)
		}
		if l.colStep < 2 || l.colStep >= tokens/2 || l.rowStep < 2 || l.rowStep >= tokens/2 {
			t.Fatalf("%d tokens: labels every %d columns and %d rows of %d px cells", tokens, l.colStep, l.rowStep, l.CellPx)
		}
		corner := l.Cell(0, 11, 0, tokens-1).Max.Sub(image.Pt(1, 1)) // of a masked cell
		if got, want := img.RGBAAt(corner.X, corner.Y), masked; l.CellPx >= gridMin && got != white || l.CellPx < gridMin && got != want {
			t.Errorf("%d tokens: the corner of a %d px cell is %v (white: a grid line)", tokens, l.CellPx, got)
		}
		checkColumnLabels(t, img, l, tokens)
		checkRowLabels(t, img, l, f.Grid[0][11].Scored)
	}
}

// checkColumnLabels: over each labelled column of the last panel its
// position number and label, blank midway to the next (they do not run
// together) and right of the heatmap (the last does not run into the
// predictions' header).
func checkColumnLabels(t *testing.T, img *image.RGBA, l Layout, tokens int) {
	t.Helper()
	hm := l.Heatmap(0, l.Heads-1)
	for _, line := range []struct {
		name string
		y    int
	}{{"position numbers", hm.Min.Y - 2*(lineH+spacing)}, {"labels", hm.Min.Y - lineH - spacing}} {
		band := func(x0, x1 int) image.Rectangle { return image.Rect(x0, line.y, x1, line.y+lineH) }
		for j := 0; j+l.colStep < tokens; j += l.colStep {
			centre := hm.Min.X + j*l.CellPx + l.CellPx/2
			if blank(img, band(centre-charW, centre+charW)) {
				t.Errorf("%d tokens, %s: nothing over column %d", tokens, line.name, j)
			}
			if mid := centre + l.colStep*l.CellPx/2; !blank(img, band(mid-labelGap/2+1, mid+labelGap/2)) {
				t.Errorf("%d tokens, %s: columns %d and %d run together at x %d", tokens, line.name, j, j+l.colStep, mid)
			}
		}
		if !blank(img, band(hm.Max.X, hm.Max.X+predGap)) {
			t.Errorf("%d tokens, %s: the last runs past the heatmap", tokens, line.name)
		}
	}
}

// checkRowLabels: beside each labelled row of the last panel its position
// number, label and prediction, blank midway to the next; and every scored
// row, only those, marked.
func checkRowLabels(t *testing.T, img *image.RGBA, l Layout, scored []bool) {
	t.Helper()
	tokens, hm := len(scored), l.Heatmap(0, l.Heads-1)
	left, pred := hm.Min.X-l.rowLabelW-markW-l.posW, l.Prediction(0, l.Heads-1, 0)
	for _, column := range []struct {
		name   string
		x0, x1 int
	}{{"position numbers", left, left + l.posW}, {"labels", hm.Min.X - l.rowLabelW, hm.Min.X}, {"predictions", pred.Min.X, pred.Max.X}} {
		line := func(y int) image.Rectangle { return image.Rect(column.x0, y, column.x1, y+1) }
		for i := 0; i+l.rowStep < tokens; i += l.rowStep {
			centre := hm.Min.Y + i*l.CellPx + l.CellPx/2
			if blank(img, line(centre)) {
				t.Errorf("%d tokens, %s: nothing beside row %d", tokens, column.name, i)
			}
			if mid := centre + l.rowStep*l.CellPx/2; !blank(img, line(mid)) {
				t.Errorf("%d tokens, %s: rows %d and %d run together at y %d", tokens, column.name, i, i+l.rowStep, mid)
			}
		}
	}
	for i, s := range scored {
		mark := image.Rect(left+l.posW, hm.Min.Y+i*l.CellPx, left+l.posW+markW, hm.Min.Y+(i+1)*l.CellPx)
		if hasColour(img, mark, ink) != s {
			t.Errorf("%d tokens, row %d: scored mark drawn %t, want %t", tokens, i, !s, s)
		}
	}
}

// blank reports whether every pixel of r is white.
func blank(img *image.RGBA, r image.Rectangle) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if img.RGBAAt(x, y) != white {
				return false
			}
		}
	}
	return true
}
