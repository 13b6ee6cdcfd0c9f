package report

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/open/opentest"
)

// TestFigureTitleNamesTheFlag: the PNG's title of a short -text on a model
// trained elsewhere names the model as the terminal does, with no step, and
// says the tokens came from -text; given by -tokens, it says -tokens.
func TestFigureTitleNamesTheFlag(t *testing.T) {
	dir := opentest.TinyGPT2Dir(t, 4, opentest.DNAFiles)
	for _, c := range []struct {
		o    Options
		flag string
	}{
		{Options{Text: "ac"}, "-text"},
		{Options{Tokens: "0 1"}, "-tokens"},
	} {
		c.o.Checkpoint, c.o.Layers, c.o.Heads, c.o.Samples, c.o.Seed = dir, Every, Every, 2, 1
		r, err := build(c.o)
		if err != nil {
			t.Fatal(err)
		}
		title := r.Figure().Title
		if want := r.Text(true).Heading(); !strings.HasPrefix(title[0], want+"  (1 layer x 2 heads") || strings.Contains(title[0], "step") {
			t.Errorf("%s: the PNG's title %q, want the terminal's heading %q and the shape, no step", c.flag, title[0], want)
		}
		if want := "heatmaps: tokens from " + c.flag + ";"; !strings.HasPrefix(title[1], want) {
			t.Errorf("the PNG's title line %q, want %q...", title[1], want)
		}
	}
}
