package msg

import "testing"

// TestNearest: a slip of one or two letters finds its flag or key; a name
// far from every candidate, or equal to one, finds nothing.
func TestNearest(t *testing.T) {
	flags := []string{"config", "out", "set", "resume"}
	keys := []string{"model.heads", "model.layers", "model.d_model", "train.steps"}
	for _, c := range []struct {
		name  string
		cands []string
		want  string
	}{
		{"confg", flags, "config"},
		{"conifg", flags, "config"},
		{"resum", flags, "resume"},
		{"model.hedas", keys, "model.heads"},
		{"model.head", keys, "model.heads"},
		{"lr", flags, ""},
		{"steps", flags, ""},
		{"config", flags, ""},
	} {
		if got := Nearest(c.name, c.cands); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
