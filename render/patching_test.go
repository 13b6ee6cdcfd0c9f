package render

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// patchingView is a view of 2 layers by 30 positions, clean 1 and
// corrupted 0, position p of layer 1 at p/29 and layer 0 not patched.
func patchingView() ActivationPatching {
	v := ActivationPatching{Kind: "resid_pre", Activation: "blocks.N.hook_resid_pre", How: "one component a run", Metric: "a metric", Clean: 1, Corrupted: 0,
		RowAxis: "layers", ColAxis: "positions", Rows: []string{"L0", "L1"}, Values: make([][]float64, 2)}
	for p := range 30 {
		v.Cols, v.ColNotes = append(v.Cols, strings.Repeat("1", 1+p/10)), append(v.ColNotes, "t")
		v.Values[0] = append(v.Values[0], math.NaN())
		v.Values[1] = append(v.Values[1], float64(p)/29)
	}
	return v
}

// TestPatchingView: the table lists the most moved components first with
// their share restored, the heatmap wraps its positions into blocks that
// fit the width and marks components not patched; with clean and
// corrupted equal no share is defined and no heatmap drawn.
func TestPatchingView(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out}
	writePatching(p, 40, Plain, patchingView())
	text := out.String()
	for _, want := range []string{"L1 pos 111 \"t\"", "+1.000", "and 20 more components"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	blocks := 0
	for _, line := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(line); n > 39 {
			t.Errorf("a line of %d columns at 40: %q", n, line)
		}
		if strings.HasPrefix(line, "L1 ") && !strings.Contains(line, "pos") {
			blocks++
		}
		if strings.HasPrefix(line, "L0 ") && (!strings.Contains(line, MaskedGlyph) || strings.Trim(line[3:], " "+MaskedGlyph) != "") {
			t.Errorf("layer 0, not patched, drawn as %q; want %s alone", line, MaskedGlyph)
		}
	}
	if blocks < 3 {
		t.Errorf("the heatmap of 30 positions at 40 columns is %d blocks, want 3 or more:\n%s", blocks, text)
	}
	flat := patchingView()
	flat.Clean = 0
	out.Reset()
	writePatching(&printer{w: &out}, 80, Plain, flat)
	if text := out.String(); !strings.Contains(text, "no heatmap") || !strings.Contains(text, "n/a") {
		t.Errorf("clean = corrupted: want no heatmap and n/a shares:\n%s", text)
	}
}
