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

// TestDidYouMean: a value spelled as another library spells it, or another
// library's word for it, or a slip of the finger finds the allowed value; a
// value near none finds nothing.
func TestDidYouMean(t *testing.T) {
	positions := []string{"learned", "sinusoidal", "rope", "alibi", "none"}
	aliases := map[string]string{"rotary": "rope", "rmsnorm": "none"}
	for _, c := range []struct{ value, want string }{
		{"RoPE", "; did you mean rope?"},
		{"ALiBi", "; did you mean alibi?"},
		{"rotary", "; did you mean rope?"},
		{"Rotary", "; did you mean rope?"},
		{"lerned", "; did you mean learned?"},
		{"sinusodial", "; did you mean sinusoidal?"},
		{"rms_norm", "; did you mean none?"},
		{"relative", ""},
		{"", ""},
	} {
		if got := DidYouMean(c.value, positions, aliases); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.value, got, c.want)
		}
	}
}
