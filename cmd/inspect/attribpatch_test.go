package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestPatchAttributionIsTheAPI: -patch attribution-z and
// attribution-resid_pre -json give analysis.AttributionPatch's estimates
// (the roles swapped, as the other kinds patch the clean run into the
// corrupted one: Denoising) for every layer and head or position, with its
// clean and corrupted figures, and says how they are made (how), as the
// text view does.
func TestPatchAttributionIsTheAPI(t *testing.T) {
	m := opentest.Induction(t).Model
	a, err := analysis.AttributionPatch(m, [][]int{{11, 12, 13, 14, 3, 7, 1}}, [][]int{{3, 7, 1, 9, 3, 7, 1}}, analysis.LogitDiff(9, 14))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"z", "resid_pre"} {
		var doc struct {
			Patching struct {
				Kind, How        string
				Clean, Corrupted float64
				Axes             []string
				Values           [][]*float64
			}
		}
		if err := json.Unmarshal(runOK(t, patchArgs("attribution-"+kind, "-json")...), &doc); err != nil {
			t.Fatal(err)
		}
		want, err := a.Denoising(kind)
		if err != nil {
			t.Fatal(err)
		}
		p := doc.Patching
		if p.Kind != "attribution-"+kind || p.Clean != want.Clean || p.Corrupted != want.Corrupted {
			t.Fatalf("%s: kind %q clean %v corrupted %v, want %q %v %v", kind, p.Kind, p.Clean, p.Corrupted, "attribution-"+kind, want.Clean, want.Corrupted)
		}
		if !strings.HasPrefix(p.How, "estimated by attribution patching") {
			t.Errorf("%s: how %q", kind, p.How)
		}
		cols := want.Values.Shape[1]
		for l, row := range p.Values {
			for j, v := range row {
				if w := want.Values.At(l*cols + j); v == nil || *v != w {
					t.Errorf("%s: layer %d column %d: %v, AttributionPatch %v", kind, l, j, v, w)
				}
			}
		}
		if got := fmt.Sprint(len(p.Values), len(p.Values[0]), p.Axes); got != fmt.Sprint(want.Values.Shape[0], cols, p.Axes) {
			t.Errorf("%s: values %s", kind, got)
		}
	}
	out := string(runOK(t, patchArgs("attribution-z", "-summary")...))
	if !strings.Contains(out, "estimated by attribution patching") {
		t.Errorf("the view does not say the figures are estimated:\n%s", out)
	}
}
