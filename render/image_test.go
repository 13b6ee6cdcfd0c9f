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
