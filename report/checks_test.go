package report

import "testing"

// TestCheckIndexWording: one layer or head is "1 layer (only layer 0)", not
// "1 layers (0..0)"; a list names itself and the number past the model.
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
		if err := Only(3).check("-x", c.n, c.noun, c.per); err == nil || err.Error() != c.want {
			t.Errorf("check(%d %s) = %v, want %q", c.n, c.noun, err, c.want)
		}
	}
	if err := Only(0, 2, 3, 4).check("-x", 3, "layer", ""); err == nil || err.Error() != "-x 0,2-4: layer 4 does not exist: the model has 3 layers (0..2)" {
		t.Errorf("check(0,2-4 of 3 layers) = %v", err)
	}
	if err := Only(0, 2).check("-x", 3, "layer", ""); err != nil {
		t.Errorf("check(0,2 of 3 layers) = %v", err)
	}
}
