package report

import "testing"

// TestICLCountsInductionHeads: the ICL line's count of induction heads is
// every head's, whatever -layer and -head select: testdata/induction has
// two (layer 1 heads 1 and 3), also when the view shows layer 0 alone.
func TestICLCountsInductionHeads(t *testing.T) {
	r, err := build(Options{Checkpoint: "../testdata/induction", Layers: Only(0), Samples: 8, Seed: 1, Circuits: true})
	if err != nil {
		t.Fatal(err)
	}
	v := r.CircuitsView()
	if v.ICL == nil || v.ICL.InductionHeads != 2 {
		t.Errorf("ICL %+v: want 2 induction heads", v.ICL)
	}
}
