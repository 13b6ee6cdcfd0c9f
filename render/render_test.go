package render

import (
	"bytes"
	"flag"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render/ -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

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
	golden(t, "plain.golden", b.Bytes())
	if bytes.ContainsRune(b.Bytes(), 0x1b) {
		t.Error("plain output contains an escape character")
	}
}

// TestPlainCells checks the drawn cells against the ramp directly: in the
// previous-token panel, row i has "@@@@" under key i-1, blanks elsewhere.
func TestPlainCells(t *testing.T) {
	lines := fixture()[0].lines(Plain, false)
	// lines: title, key labels, 5 rows, 1 note; a row is "%3s " + 5 cells of 4
	for i := 0; i < 5; i++ {
		row := lines[2+i]
		for j := 0; j < 5; j++ {
			got := row[4+4*j : 8+4*j]
			want := "    "
			if j == max(0, i-1) {
				want = "@@@@"
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
		{need, height + 1}, // side by side + legend
		{need - 1, len(p[0].lines(Plain, false)) + 1 + height + 1}, // stacked, blank line between, legend
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
	golden(t, "compact.golden", b.Bytes())
	for _, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if visibleWidth(l) > wide-1 {
			t.Errorf("line %q is %d wide, want <= %d", l, visibleWidth(l), wide-1)
		}
	}
	if !strings.Contains(b.String(), "  3 @@\n") {
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
		if _, _, err := Grid([][]Panel{{bad}}); err == nil {
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
	img, l, err := Grid(grid)
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Size() != l.Size() || l.Size() != image.Pt(2*l.Panel.X, 2*l.Panel.Y) {
		t.Fatalf("image %v, layout %v, panel %v", img.Bounds(), l.Size(), l.Panel)
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
