package report

import (
	"math"
	"testing"
)

// TestRoundUp: the loss scale's top is a round number above the highest loss.
func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ v, want float64 }{{2.83, 3}, {3.473, 4}, {0.042, 0.05}, {1, 1.5}, {9.5, 10}} {
		if got := roundUp(c.v); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("roundUp(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}
