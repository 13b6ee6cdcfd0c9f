package report

import "testing"

// TestCheckIndexWording: one layer or head is "1 layer (only layer 0)", not
// "1 layers (0..0)".
func TestCheckIndexWording(t *testing.T) {
	for _, c := range []struct {
		n         int
		noun, per string
		want      string
	}{
		{1, "layer", "", "-x 3 does not exist: the model has 1 layer (only layer 0)"},
		{1, "head", " per layer", "-x 3 does not exist: the model has 1 head per layer (only head 0)"},
		{3, "layer", "", "-x 3 does not exist: the model has 3 layers (0..2)"},
	} {
		if err := checkIndex("-x", 3, c.n, c.noun, c.per); err == nil || err.Error() != c.want {
			t.Errorf("checkIndex(%d %s) = %v, want %q", c.n, c.noun, err, c.want)
		}
	}
}
