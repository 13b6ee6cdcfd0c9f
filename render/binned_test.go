package render

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

// previousToken is a causal previous-token head on n positions (position 0
// reads itself), labelled by token "t0", "t1", ...
func previousToken(n int) Panel {
	w := make([][]float64, n)
	labels := make([]string, n)
	for i := range w {
		w[i] = make([]float64, n)
		w[i][max(0, i-1)] = 1
		labels[i] = "t" + strconv.Itoa(i)
	}
	return Panel{Title: "layer 0 head 0", Weights: w, Rows: labels, Cols: labels, Causal: true, Notes: []string{"role: previous-token (1.00)"}}
}

// TestBinnedFits: a panel whose compact form is wider than the terminal
// (40 positions: 2+1+2*40 = 83 columns) is binned by the fewest positions
// that fit (2 at 60 columns, 3 at 40), every line then fits, each panel's last row is labelled by its bin's
// first position, and a line
// says how the cells were binned and where every position is drawn.
func TestBinnedFits(t *testing.T) {
	for _, c := range []struct{ width, bin int }{{60, 2}, {40, 3}} {
		var b bytes.Buffer
		if err := Terminal(&b, []Panel{previousToken(40), previousToken(40)}, Plain, c.width); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if visibleWidth(l) > c.width {
				t.Errorf("width %d: line %q is %d wide", c.width, l, visibleWidth(l))
			}
		}
		want := "a cell is " + strconv.Itoa(c.bin) + " query positions by " + strconv.Itoa(c.bin) + " key positions"
		joined := strings.ReplaceAll(out, "\n  ", " ")
		if !strings.Contains(joined, want) || !strings.Contains(joined, "-png FILE or -html FILE draws every position") {
			t.Errorf("width %d: no line saying %q and where every position is drawn:\n%s", c.width, want, out)
		}
		if rows := strings.Count(out, "\n"+strconv.Itoa(39/c.bin*c.bin)+" "); rows != 2 {
			t.Errorf("width %d: %d rows labelled by the last bin's first position %d, want 2 (one a panel):\n%s", c.width, rows, 39/c.bin*c.bin, out)
		}
	}
}

// TestBinnedShares: a bin's cell is its queries' mean share of attention
// to its keys: a previous-token head in bins of 2 gives each query bin
// half to its own bin and half to the one before (bin 0, whose queries
// both read position 0, all to itself), and each row sums to 1.
func TestBinnedShares(t *testing.T) {
	b := previousToken(9).Binned(2)
	if len(b.Weights) != 5 || b.Rows[4] != "8" || b.Cols[1] != "2" {
		t.Fatalf("9 positions in bins of 2: %d bins labelled %q, want 5 labelled 0 2 4 6 8", len(b.Weights), b.Rows)
	}
	for i, row := range b.Weights {
		want := make([]float64, 5)
		switch {
		case i == 0:
			want[0] = 1
		case i == 4: // position 8 alone, reading 7
			want[3] = 1
		default:
			want[i-1], want[i] = 0.5, 0.5
		}
		for j := range row {
			if math.Abs(row[j]-want[j]) > 1e-12 {
				t.Errorf("bin row %d: %v, want %v", i, row, want)
				break
			}
		}
	}
}

// TestBinnedMask: a binned cell is masked exactly when every query of its
// row bin masks every key of its column bin, for causal panels with and
// without a window, checked against every pair of positions.
func TestBinnedMask(t *testing.T) {
	const n = 13
	for _, window := range []int{0, 1, 2, 3, 5, 8} {
		for bin := 1; bin <= n; bin++ {
			p := previousToken(n)
			p.Window = window
			b := p.Binned(bin)
			for i := range b.Weights {
				for j := range b.Weights {
					all := true
					for q := i * bin; q < min(n, (i+1)*bin); q++ {
						for k := j * bin; k < min(n, (j+1)*bin); k++ {
							all = all && p.Masked(q, k)
						}
					}
					if b.Masked(i, j) != all {
						t.Errorf("window %d, bins of %d: cell (%d, %d) masked %t, every pair masked %t", window, bin, i, j, b.Masked(i, j), all)
					}
				}
			}
		}
	}
}
