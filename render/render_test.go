package render

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/golden"
)

var labels = []string{"3", "1", "SEP", "1", "4"}

// fixture is two heads on 5 tokens: a previous-token head (row 0 can only
// read itself) and a uniform causal head, plus a non-causal panel with every
// level of the ramp on its diagonal-free first row.
func fixture() []Panel {
	prev := make([][]float64, 5)
	unif := make([][]float64, 5)
	for i := range prev {
		prev[i] = make([]float64, 5)
		prev[i][max(0, i-1)] = 1
		unif[i] = make([]float64, 5)
		for j := 0; j <= i; j++ {
			unif[i][j] = 1 / float64(i+1)
		}
	}
	return []Panel{
		{Title: "layer 0 head 0", Weights: prev, Rows: labels, Cols: labels, Causal: true, Notes: []string{"previous-token (1.00)"}},
		{Title: "layer 0 head 1", Weights: unif, Rows: labels, Cols: labels, Causal: true, Notes: []string{"diffuse (best 0.00)", "entropy 0.83 nats"}},
	}
}

// TestPlainGolden pins the plain rendering of the fixture side by side. The
// independent part of the check is by eye once (the file is small and
// readable); after that it guards against accidental changes.
func TestPlainGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Terminal(&b, fixture(), Plain, 0); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "plain.golden", b.Bytes())
	if bytes.ContainsRune(b.Bytes(), 0x1b) {
		t.Error("plain output contains an escape character")
	}
}

// TestPlainCells checks the drawn cells against the ramp directly: in the
// previous-token panel, row i has "@@@@" under key i-1, the masked glyph
// after the diagonal (keys j > i) and blanks (weight 0) elsewhere.
func TestPlainCells(t *testing.T) {
	lines := fixture()[0].lines(Plain, false)
	// lines: title, key labels, 5 rows, 1 note; a row is "%3s " + 5 cells of 4
	for i := 0; i < 5; i++ {
		row := []rune(lines[2+i])
		for j := 0; j < 5; j++ {
			got := string(row[4+4*j : 8+4*j])
			want := "    "
			switch {
			case j == max(0, i-1):
				want = "@@@@"
			case j > i:
				want = "   ·"
			}
			if got != want {
				t.Errorf("row %d key %d: %q, want %q (line %q)", i, j, got, want, row)
			}
		}
	}
}

func TestRampChar(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want byte
	}{{-1, ' '}, {0, ' '}, {0.099, ' '}, {0.1, '.'}, {0.25, ':'}, {0.55, '+'}, {0.89, '%'}, {0.9, '@'}, {1, '@'}, {7, '@'}} {
		if got := RampChar(c.v); got != c.want {
			t.Errorf("RampChar(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestColorScale: the end points and midpoint are the map's stops, and the
// luminance (Rec. 709 weights) rises strictly from 0 to 1, so brighter
// always means more attention.
func TestColorScale(t *testing.T) {
	if Color(0) != inferno[0] || Color(1) != inferno[4] || Color(0.5) != inferno[2] {
		t.Errorf("stops: %v %v %v", Color(0), Color(0.5), Color(1))
	}
	lum := func(c color.RGBA) float64 { return 0.2126*float64(c.R) + 0.7152*float64(c.G) + 0.0722*float64(c.B) }
	prev := -1.0
	for i := 0; i <= 20; i++ {
		l := lum(Color(float64(i) / 20))
		if l <= prev {
			t.Errorf("luminance at %v is %v, not above %v", float64(i)/20, l, prev)
		}
		prev = l
	}
}

func TestXterm256(t *testing.T) {
	for _, c := range []struct {
		c    color.RGBA
		want int
	}{{color.RGBA{0, 0, 0, 255}, 16}, {color.RGBA{255, 255, 255, 255}, 231}, {color.RGBA{95, 0, 0, 255}, 52}, {color.RGBA{0, 140, 250, 255}, 16 + 6*2 + 5}} {
		if got := xterm256(c.c); got != c.want {
			t.Errorf("xterm256(%v) = %d, want %d", c.c, got, c.want)
		}
	}
}

// TestColorModes: colour modes emit their SGR background sequences, one per
// unmasked cell (5*6/2 = 15 per panel, 11 in the legend), and plain emits none.
func TestColorModes(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		seq  string
	}{{TrueColor, "\x1b[48;2;"}, {Color256, "\x1b[48;5;"}} {
		var b bytes.Buffer
		if err := Terminal(&b, fixture(), c.mode, 0); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), c.seq); n != 2*15+11 {
			t.Errorf("%v: %d escape sequences %q, want 41", c.mode, n, c.seq)
		}
		if strings.Contains(b.String(), "@@") {
			t.Errorf("%v output contains ramp cells", c.mode)
		}
		// Masked cells carry the glyph (5*4/2 = 10 per panel, one in the
		// legend), not the terminal's bare background, which a near-zero
		// (near-black) weight would look like on a dark terminal.
		if n := strings.Count(b.String(), MaskedGlyph); n != 2*10+1 {
			t.Errorf("%v: %d masked glyphs, want 21", c.mode, n)
		}
	}
}

// TestSideBySideOrStacked: two panels go side by side exactly when the
// terminal is at least as wide as both plus the gap.
func TestSideBySideOrStacked(t *testing.T) {
	p := fixture()
	need := visibleWidth(p[0].lines(Plain, false)[0]) + len(gap) + visibleWidth(p[1].lines(Plain, false)[0])
	height := len(p[1].lines(Plain, false)) // the taller panel
	for _, c := range []struct {
		width, lines int
	}{
		{need, height + 2}, // side by side + legend (two lines)
		{need - 1, len(p[0].lines(Plain, false)) + 1 + height + 2}, // stacked, blank line between, legend
	} {
		var b bytes.Buffer
		if err := Terminal(&b, p, Plain, c.width); err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(got) != c.lines {
			t.Errorf("width %d: %d lines, want %d:\n%s", c.width, len(got), c.lines, b.String())
		}
		for _, l := range got {
			if visibleWidth(l) > c.width {
				t.Errorf("width %d: line %q is %d wide", c.width, l, visibleWidth(l))
			}
		}
	}
}

// TestHeadRows: five panels wrap into rows of as many as fit side by side:
// at a width for two, rows of 2, 2 and 1 heads, every line within the width.
func TestHeadRows(t *testing.T) {
	var panels []Panel
	for range 5 {
		panels = append(panels, fixture()[0])
	}
	one := visibleWidth(panels[0].lines(Plain, false)[0])
	for _, c := range []struct{ width, rows, perRow int }{
		{2*one + len(gap), 3, 2},
		{3*one + 2*len(gap) + 1, 2, 3},
		{5*one + 4*len(gap), 1, 5},
		{0, 1, 5},
	} {
		var b bytes.Buffer
		if err := Terminal(&b, panels, Plain, c.width); err != nil {
			t.Fatal(err)
		}
		titles := 0
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		for i, l := range lines {
			if n := strings.Count(l, "layer 0 head 0"); n > 0 {
				titles++
				if want := min(c.perRow, 5-(titles-1)*c.perRow); n != want {
					t.Errorf("width %d: row %d has %d heads, want %d", c.width, titles, n, want)
				}
				if titles > 1 && lines[i-1] != "" {
					t.Errorf("width %d: no blank line before row %d", c.width, titles)
				}
			}
			if c.width > 0 && visibleWidth(l) > c.width {
				t.Errorf("width %d: line %q is %d wide", c.width, l, visibleWidth(l))
			}
		}
		if titles != c.rows {
			t.Errorf("width %d: %d rows of heads, want %d:\n%s", c.width, titles, c.rows, b.String())
		}
	}
}

// TestCompact: a panel wider than the terminal is drawn with two-character
// cells and its key labels written downwards ("SEP" over three lines), and
// every line then fits.
func TestCompact(t *testing.T) {
	p := fixture()[:1]
	wide := visibleWidth(p[0].lines(Plain, false)[0])
	var b bytes.Buffer
	if err := Terminal(&b, p, Plain, wide-1); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "compact.golden", b.Bytes())
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if visibleWidth(l) > wide-1 {
			t.Errorf("line %q is %d wide, want <= %d", l, visibleWidth(l), wide-1)
		}
	}
	if !strings.Contains(b.String(), "  3 @@ · · · ·\n") {
		t.Errorf("no two-character cell in:\n%s", b.String())
	}
}

func TestTable(t *testing.T) {
	var b bytes.Buffer
	rows := []Row{
		{"token", []string{"3", "1", "SEP", "1", "4"}},
		{"target", []string{"", "", "", "3", "1"}},
		{"", []string{"", "", "", "✓", "✗"}},
	}
	if err := Table(&b, rows, 20); err != nil {
		t.Fatal(err)
	}
	want := "token     3   1 SEP\n" +
		"target\n" +
		"\n" +
		"\n" +
		"token     1   4\n" +
		"target    3   1\n" +
		"          ✓   ✗\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestBadPanels(t *testing.T) {
	p := fixture()[0]
	ragged := p
	ragged.Weights = [][]float64{{1}, {1, 0}, {1, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0, 0}}
	short := p
	short.Rows = labels[:4]
	for _, bad := range []Panel{ragged, short, {Title: "empty"}} {
		if err := Terminal(&bytes.Buffer{}, []Panel{bad}, Plain, 0); err == nil {
			t.Errorf("panel %+v accepted", bad)
		}
		if _, _, err := Grid(Figure{Grid: [][]Panel{{bad}}}); err == nil {
			t.Errorf("png panel %+v accepted", bad)
		}
	}
}

// TestGridPNG: the image has the layout's size, every heatmap cell's centre
// is Color(weight) (masked cells grey), the two heads' heatmaps differ, and
// the written file decodes to the same pixels with no temporary left behind.
func TestGridPNG(t *testing.T) {
	p := fixture()
	grid := [][]Panel{p, p}
	img, l, err := Grid(Figure{Title: []string{"a title", FigureLegend}, Grid: grid})
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Size() != l.Size() || l.Size() != image.Pt(2*l.Panel.X, l.TitleH+2*l.Panel.Y) || l.TitleH < 2*lineH {
		t.Fatalf("image %v, layout %v, panel %v, title %d px", img.Bounds(), l.Size(), l.Panel, l.TitleH)
	}
	if !hasColour(img, image.Rect(0, 0, l.Size().X, l.TitleH), ink) {
		t.Error("no title text above the panels")
	}
	if l.CellPx < 16 {
		t.Errorf("cells are %d px, want >= 16", l.CellPx)
	}
	for layer := range grid {
		for head, panel := range grid[layer] {
			if !l.Heatmap(layer, head).In(l.PanelRect(layer, head)) {
				t.Errorf("heatmap %v outside panel %v", l.Heatmap(layer, head), l.PanelRect(layer, head))
			}
			for i := range 5 {
				for j := range 5 {
					r := l.Cell(layer, head, i, j)
					centre := r.Min.Add(r.Size().Div(2))
					want := Color(panel.Weights[i][j])
					if j > i {
						want = masked
					}
					if got := img.RGBAAt(centre.X, centre.Y); got != want {
						t.Fatalf("panel %d,%d cell %d,%d: %v, want %v", layer, head, i, j, got, want)
					}
				}
			}
		}
	}
	if samePixels(img, l.Heatmap(0, 0), l.Heatmap(0, 1)) {
		t.Error("the two heads' heatmaps are identical")
	}
	if !samePixels(img, l.Heatmap(0, 1), l.Heatmap(1, 1)) {
		t.Error("the same head drawn twice differs")
	}

	var encoded bytes.Buffer
	if err := png.Encode(&encoded, img); err != nil {
		t.Fatal(err)
	}
	back, err := png.Decode(&encoded)
	if err != nil {
		t.Fatal(err)
	}
	if back.Bounds() != img.Bounds() || back.At(l.Cell(0, 0, 1, 0).Min.X, l.Cell(0, 0, 1, 0).Min.Y) != color.Color(Color(1)) {
		t.Errorf("decoded image differs: %v", back.Bounds())
	}
}

func samePixels(img *image.RGBA, a, b image.Rectangle) bool {
	if a.Size() != b.Size() {
		return false
	}
	for y := 0; y < a.Dy(); y++ {
		for x := 0; x < a.Dx(); x++ {
			if img.RGBAAt(a.Min.X+x, a.Min.Y+y) != img.RGBAAt(b.Min.X+x, b.Min.Y+y) {
				return false
			}
		}
	}
	return true
}

// hasColour reports whether any pixel of r is exactly c.
func hasColour(img *image.RGBA, r image.Rectangle, c color.RGBA) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if img.RGBAAt(x, y) == c {
				return true
			}
		}
	}
	return false
}

// TestFigureWraps: eight heads of one layer in at most four panels' width
// wrap into two rows of four (not an 8-panel strip), each panel inside the
// image and none overlapping; a second layer starts its own rows.
func TestFigureWraps(t *testing.T) {
	one, err := GridLayout(Figure{Grid: [][]Panel{fixture()[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	var heads []Panel
	for range 8 {
		heads = append(heads, fixture()[0])
	}
	for _, c := range []struct {
		layers, cols, rows int
	}{{1, 4, 2}, {2, 4, 4}} {
		grid := make([][]Panel, c.layers)
		for i := range grid {
			grid[i] = heads
		}
		img, l, err := Grid(Figure{Grid: grid, MaxWidth: 4*one.Panel.X + one.Panel.X/2})
		if err != nil {
			t.Fatal(err)
		}
		if l.Cols != c.cols || img.Bounds().Size() != image.Pt(c.cols*l.Panel.X, c.rows*l.Panel.Y) {
			t.Errorf("%d layers: %d columns, image %v; want %d columns of %d rows of %v", c.layers, l.Cols, img.Bounds().Size(), c.cols, c.rows, l.Panel)
		}
		seen := map[image.Point]bool{}
		for layer := range c.layers {
			for head := range 8 {
				r := l.PanelRect(layer, head)
				if !r.In(img.Bounds()) || seen[r.Min] {
					t.Errorf("%d layers: panel %d,%d at %v: outside the image or on another panel", c.layers, layer, head, r)
				}
				seen[r.Min] = true
				cell := l.Cell(layer, head, 1, 0)
				if got := img.RGBAAt(cell.Min.X+cell.Dx()/2, cell.Min.Y+cell.Dy()/2); got != Color(1) {
					t.Errorf("%d layers: panel %d,%d cell (1, 0) is %v, want %v", c.layers, layer, head, got, Color(1))
				}
			}
		}
		if c.layers == 2 && l.PanelRect(1, 0).Min.Y != 2*l.Panel.Y {
			t.Errorf("layer 1 starts at y %d, want its own row at %d", l.PanelRect(1, 0).Min.Y, 2*l.Panel.Y)
		}
	}
}

// TestFigureMarks: position numbers over the columns and beside the rows
// (grey), ">" on the scored rows only, SEP's labels in blue, and the
// predictions coloured right (green), wrong (red) or not scored (grey).
func TestFigureMarks(t *testing.T) {
	p := fixture()[0]
	p.Scored = []bool{false, false, true, true, true}
	p.Separator = []bool{false, false, true, false, false}
	p.Predicted = []string{"1", "SEP", "1", "9", "4"}
	p.Correct = []bool{false, false, true, false, true}
	img, l, err := Grid(Figure{Grid: [][]Panel{{p}}})
	if err != nil {
		t.Fatal(err)
	}
	hm := l.Heatmap(0, 0)
	rowBand := func(i int) image.Rectangle {
		return image.Rect(l.PanelRect(0, 0).Min.X, hm.Min.Y+i*l.CellPx, hm.Min.X, hm.Min.Y+(i+1)*l.CellPx)
	}
	for i := range 5 {
		mark := image.Rect(hm.Min.X-l.rowLabelW-markW, hm.Min.Y+i*l.CellPx, hm.Min.X-l.rowLabelW, hm.Min.Y+(i+1)*l.CellPx)
		if got := hasColour(img, mark, ink); got != p.Scored[i] {
			t.Errorf("row %d: scored mark drawn %v, want %v", i, got, p.Scored[i])
		}
		if !hasColour(img, rowBand(i), grey) {
			t.Errorf("row %d: no position number", i)
		}
		if got := hasColour(img, rowBand(i), sepInk); got != p.Separator[i] {
			t.Errorf("row %d: blue label %v, want %v", i, got, p.Separator[i])
		}
		want := grey
		switch {
		case p.Scored[i] && p.Correct[i]:
			want = right
		case p.Scored[i]:
			want = wrong
		}
		if !hasColour(img, l.Prediction(0, 0, i), want) {
			t.Errorf("row %d: prediction %q not drawn in %v", i, p.Predicted[i], want)
		}
	}
	header := image.Rect(hm.Min.X, hm.Min.Y-2*(lineH+spacing), hm.Max.X, hm.Min.Y-lineH-spacing)
	if !hasColour(img, header, grey) {
		t.Error("no position numbers over the columns")
	}
	bad := p
	bad.Scored = []bool{true}
	if _, _, err := Grid(Figure{Grid: [][]Panel{{bad}}}); err == nil || !strings.Contains(err.Error(), "1 scored marks for 5 positions") {
		t.Errorf("mismatched marks: %v", err)
	}
}

// TestWindowBand: a panel with a window draws the keys out of it as masked
// as well as those after the query: for T = 5 and window 2, query i sees
// keys i-1 and i, so 10 cells above the diagonal and 6 below the band are
// masked; Masked agrees cell by cell.
func TestWindowBand(t *testing.T) {
	p := fixture()[0]
	p.Window = 2
	var b bytes.Buffer
	if err := Terminal(&b, []Panel{p}, Plain, 0); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), MaskedGlyph); n != 10+6+1 {
		t.Errorf("%d masked glyphs, want 16 and one in the legend:\n%s", n, b.String())
	}
	for i := 0; i < 5; i++ {
		for j := 0; j < 5; j++ {
			if want := j > i || j < i-1; p.Masked(i, j) != want {
				t.Errorf("Masked(%d, %d) = %t, want %t", i, j, p.Masked(i, j), want)
			}
		}
	}
}

// TestFigureBalancedRows: four heads where three fit a row are laid out
// two and two, not three and one.
func TestFigureBalancedRows(t *testing.T) {
	one, err := GridLayout(Figure{Grid: [][]Panel{fixture()[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	heads := []Panel{fixture()[0], fixture()[0], fixture()[0], fixture()[0]}
	_, l, err := Grid(Figure{Grid: [][]Panel{heads}, MaxWidth: 3*one.Panel.X + one.Panel.X/2})
	if err != nil {
		t.Fatal(err)
	}
	if l.Cols != 2 {
		t.Errorf("4 heads, 3 fitting a row: %d columns, want 2 (two rows of two)", l.Cols)
	}
}

// TestScoresPNG: each cell is filled with the colour of its value on its
// column's range, the table is as tall as its rows, bad shapes are refused,
// and Stack puts images one under the other.
func TestScoresPNG(t *testing.T) {
	tab := ScoreTable{
		Title:   []string{"scores"},
		Rows:    []string{"L0 H0", "L1 H3"},
		Columns: []ScoreColumn{{Name: "prefix", Lo: 0, Hi: 1}, {Name: "copying", Lo: -1, Hi: 1}},
		Values:  [][]float64{{0, 1}, {1, -1}},
	}
	img, err := Scores(tab)
	if err != nil {
		t.Fatal(err)
	}
	x0, y0 := pad+5*charW+charW, pad+(lineH+spacing)+scoreCellH
	for i, row := range tab.Values {
		for j, v := range row {
			c := tab.Columns[j]
			want := Color((v - c.Lo) / (c.Hi - c.Lo))
			// the cell's top-left pixel: the number is drawn further in
			if got := img.RGBAAt(x0+j*scoreCellW+1, y0+i*scoreCellH+1); got != want {
				t.Errorf("cell (%d, %d) = %v, want %v", i, j, got, want)
			}
		}
	}
	if _, err := Scores(ScoreTable{Rows: []string{"a"}, Columns: tab.Columns, Values: [][]float64{{1}}}); err == nil {
		t.Error("a row with too few values was drawn")
	}
	both := Stack(img, img)
	if both.Bounds().Dy() != 2*img.Bounds().Dy() || both.RGBAAt(x0+1, img.Bounds().Dy()+y0+1) != img.RGBAAt(x0+1, y0+1) {
		t.Errorf("stack of %v is %v", img.Bounds(), both.Bounds())
	}
}
