package render

import (
	"slices"
	"testing"
)

// TestReadoutInTableTitles: the PNG tables carry what direct logit
// attribution and the logit lens do where the readout is not linear, a
// line of their titles, and nothing when it is linear.
func TestReadoutInTableTitles(t *testing.T) {
	c := Circuits{Layers: 1, Heads: 1, PerHead: []CircuitHead{{Prefix: 0.5}}, DirectLogit: &DirectLogit{Readout: "the logit before the cap"},
		Lens: []LensDepth{{Depth: 0}, {Depth: 1}}, LensReadout: "capped as the output"}
	if got := headMetrics(c).Title; !slices.Contains(got, "direct logit attribution: the logit before the cap") {
		t.Errorf("head table titles %q: no attribution readout", got)
	}
	if got := lensTable(c.Lens, c.LensReadout).Title; !slices.Contains(got, "capped as the output") {
		t.Errorf("lens table titles %q: no lens readout", got)
	}
	c.DirectLogit.Readout = ""
	if got := headMetrics(c).Title; len(got) != 1 {
		t.Errorf("a linear readout's head table has titles %q, want one", got)
	}
	if got := lensTable(c.Lens, "").Title; len(got) != 1 {
		t.Errorf("a linear readout's lens table has titles %q, want one", got)
	}
	if _, err := CircuitImages(Circuits{Layers: 1, Heads: 1, PerHead: c.PerHead, DirectLogit: &DirectLogit{Readout: "the logit before the final soft-cap at 30 (the cap keeps the logits' order); each head is read through its layer's ln1_post at the whole attention output's divisor"},
		Lens: c.Lens, LensReadout: "every depth's logits are soft-capped at 30, as the model's output is"}); err != nil {
		t.Errorf("the tables with long readouts: %v", err)
	}
}
