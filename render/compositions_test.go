package render

import (
	"math"
	"testing"
)

// TestKCompositionsOfAPick: with compositions measured between the heads
// picked alone (heads 0 and 2 of layers 1 and 2 of four), the K-composition
// tables are the one pair of layers measured, a measured pair its K, every
// other cell NaN (drawn "-"); every pair measured fills its table.
func TestKCompositionsOfAPick(t *testing.T) {
	c := Circuits{Layers: 4, Heads: 3}
	for _, a := range []int{0, 2} {
		for _, b := range []int{0, 2} {
			c.Composition = append(c.Composition, Composition{From: [2]int{1, a}, To: [2]int{2, b}, K: float64(1+a*3+b) / 10})
		}
	}
	tables := kCompositions(c)
	if len(tables) != 1 || tables[0].Title[0] != "K-composition: layer 1's heads (rows) read by layer 2's keys (columns)" {
		t.Fatalf("tables %+v, want layer 1's alone", tables)
	}
	for from, row := range tables[0].Values {
		for to, v := range row {
			picked := from != 1 && to != 1
			if want := float64(1+from*3+to) / 10; picked && v != want || !picked && !math.IsNaN(v) {
				t.Errorf("L1 H%d -> L2 H%d: %v (picked %t)", from, to, v, picked)
			}
		}
	}
	if _, err := Scores(tables[0]); err != nil {
		t.Fatalf("drawing the table with unmeasured cells: %v", err)
	}
}
