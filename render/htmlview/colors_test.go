package htmlview

import (
	"fmt"
	"strings"
	"testing"

	view "github.com/attnscope/attnscope/render"
)

// TestPageUsesTheRenderColors: the page's colour stops are render.Color's
// at 0, 1/4, 1/2, 3/4 and 1, so a weight has one colour in every view.
func TestPageUsesTheRenderColors(t *testing.T) {
	var stops []string
	for _, v := range []float64{0, 0.25, 0.5, 0.75, 1} {
		c := view.Color(v)
		stops = append(stops, fmt.Sprintf("[%d, %d, %d]", c.R, c.G, c.B))
	}
	if want := "const STOPS = [" + strings.Join(stops, ", ") + "];"; !strings.Contains(pageJS, want) {
		t.Errorf("page.js lacks %s", want)
	}
}
