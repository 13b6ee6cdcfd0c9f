package layers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/internal/graphtest"
)

// TestScoresOptionsRefused: a negative, infinite or NaN scale or soft-cap,
// and a soft-cap with ALiBi, are refused by CheckOptions in one line naming
// the option; SoftCap refuses a cap or scale that is not positive and
// finite before it adds a node.
func TestScoresOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		o    AttentionOptions
		want string
	}{
		{AttentionOptions{Scale: -0.5}, "attn_scale = -0.5: must be 0 (1/sqrt(head size)) or positive and finite"},
		{AttentionOptions{Scale: math.Inf(1)}, "attn_scale = +Inf"},
		{AttentionOptions{SoftCap: math.NaN()}, "attn_softcap = NaN: must be 0 (none) or positive and finite"},
		{AttentionOptions{SoftCap: 50, ALiBi: true}, "attn_softcap = 50 with position = alibi"},
	} {
		err := CheckOptions(16, 4, 0, c.o, optionName)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line starting %q", c.o, err, c.want)
		}
	}
	if err := CheckOptions(16, 4, 0, AttentionOptions{Scale: 1, SoftCap: 50}, optionName); err != nil {
		t.Errorf("GPT-Neo's scale with Gemma 2's cap refused: %v", err)
	}
	g := gorgonia.NewGraph()
	x := NewParam(g, "x", graphtest.RandDense(rand.New(rand.NewPCG(1, 2)), 1, 2, 3))
	nodes := len(g.AllNodes())
	for _, path := range Paths {
		for _, bad := range [][2]float64{{1, 0}, {0, 30}, {1, math.Inf(1)}, {math.NaN(), 30}} {
			if _, err := SoftCap(path, "capped", x, bad[0], bad[1]); err == nil || !strings.Contains(err.Error(), "must be positive and finite") {
				t.Errorf("%s: SoftCap(scale %v, cap %v): %v", path, bad[0], bad[1], err)
			}
		}
	}
	if len(g.AllNodes()) != nodes {
		t.Errorf("refused soft-caps added %d nodes", len(g.AllNodes())-nodes)
	}
}
