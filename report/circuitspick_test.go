package report

import (
	"reflect"
	"testing"

	"github.com/attnscope/attnscope/analysis"
)

// TestCircuitsOnAPickAreTheFullRuns: -circuits -layer 0,1 -head 1,3 on the
// committed induction run gives, for the heads picked, the figures of the
// run on every head: each picked head's copying record, each composition
// between two picked heads, and the measures read from the run (prefix
// matching, direct logit attribution, the logit lens) whole; and nothing
// for a head outside the pick.
func TestCircuitsOnAPickAreTheFullRuns(t *testing.T) {
	o := Options{Checkpoint: "../testdata/induction", Samples: 8, Seed: 1, Circuits: true}
	full, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Layers, o.Heads = Only(0, 1), Only(1, 3)
	picked, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	f, p := full.Circuits, picked.Circuits
	in := func(l, h int) bool { return (l == 0 || l == 1) && (h == 1 || h == 3) }
	var wantCopying []analysis.Copying
	for _, c := range f.Copying {
		if in(c.Layer, c.Head) {
			wantCopying = append(wantCopying, c)
		}
	}
	if len(wantCopying) != 4 || !reflect.DeepEqual(p.Copying, wantCopying) {
		t.Errorf("copying %+v, want the full run's %+v", p.Copying, wantCopying)
	}
	var wantComposition []analysis.Composition
	for _, c := range f.Composition {
		if in(c.From[0], c.From[1]) && in(c.To[0], c.To[1]) {
			wantComposition = append(wantComposition, c)
		}
	}
	if len(wantComposition) != 4 || !reflect.DeepEqual(p.Composition, wantComposition) {
		t.Errorf("composition %+v, want the full run's %+v", p.Composition, wantComposition)
	}
	for what, pair := range map[string][2]any{
		"prefix matching": {p.PrefixMatching, f.PrefixMatching},
		"direct logit":    {p.DirectLogit, f.DirectLogit},
		"logit lens":      {p.LogitLens, f.LogitLens},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: %+v on the pick, %+v on every head", what, pair[0], pair[1])
		}
	}
}
