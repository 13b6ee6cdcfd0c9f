package analysis_test

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
)

// TestPathPatchIsAPlainLoop: on the committed induction run (attention
// only, so a head in layer 0 reaches layer 1 through the stream alone),
// path patching from each head of layer 0 to the q, k, v (and all three)
// of heads 1 and 3 of layer 1, for two corruptions, equals a plain loop that rebuilds the
// receivers' inputs another way: the sender's change to attn_out (its z
// alone the corrupted run's) added to layer 1's resid_pre, layer 1's q, k
// and v of that run read, the receivers' parts of them put into the clean
// run. Tolerance 1e-4 of the metric's scale (float32).
func TestPathPatchIsAPlainLoop(t *testing.T) {
	m, _, _ := load()
	clean, corrupted, metric := inductionPair(1, 8, m.Config.Vocab)
	moved := map[string]int{}
	pathsMatchLoop(t, m, clean, corrupted, metric, moved)
	// The pair's corruption moves the token the induction heads copy (v);
	// one of the token before it moves the key they match (k).
	corrupted = append([]int(nil), clean...)
	corrupted[6] = metric.Wrong
	pathsMatchLoop(t, m, clean, corrupted, metric, moved)
	for _, in := range []string{"k", "v"} {
		if moved[in] == 0 {
			t.Errorf("no path to %s moved the metric by 0.1: the test compares nothing but zeros", in)
		}
	}
}

// pathsMatchLoop compares every path of TestPathPatchIsAPlainLoop on one
// pair, counting those that move the metric by 0.1 by input.
func pathsMatchLoop(t *testing.T, m *model.Model, clean, corrupted []int, metric analysis.PatchMetric, moved map[string]int) {
	receivers := ablation.Heads{{1, 1}, {1, 3}}
	base, err := analysis.RunTokensWithCache(m, [][]int{clean}, "blocks.0.attn_out")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := analysis.RunTokensWithCache(m, [][]int{corrupted}, "blocks.0.attn.hook_z")
	if err != nil {
		t.Fatal(err)
	}
	for h := range m.Config.Heads {
		for _, inputs := range []string{"q", "k", "v", "qkv"} {
			got, err := analysis.PathPatch(m, [][]int{clean}, [][]int{corrupted}, metric, [2]int{0, h}, receivers, inputs)
			if err != nil {
				t.Fatal(err)
			}
			want := plainPathPatch(t, m, clean, base, bad, metric, h, inputs)
			if math.Abs(got-want) > 1e-4*math.Max(1, math.Abs(want)) {
				t.Errorf("head 0.%d to %v's %s: path patching %.6g, the plain loop %.6g", h, receivers, inputs, got, want)
			}
			if math.Abs(want) > 0.1 {
				moved[inputs]++
			}
		}
	}
}

// plainPathPatch is path patching from head (0, h) to layer 1's heads 1
// and 3, rebuilt through the stream: see TestPathPatchIsAPlainLoop.
func plainPathPatch(t *testing.T, m *model.Model, clean []int, base, bad *analysis.Cache, metric analysis.PatchMetric, h int, inputs string) float64 {
	t.Helper()
	z, err := bad.Get("blocks.0.attn.hook_z")
	if err != nil {
		t.Fatal(err)
	}
	senderOnly := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		s := x.Shape() // (B, H, T, d)
		for i := range x.Len() {
			if i/(s[2]*s[3])%s[1] == h {
				setAt(x, i, z.At(i))
			}
		}
		return x, nil
	}
	sent, err := analysis.RunTokensWithHooks(m, [][]int{clean}, []analysis.Hook{{Name: "blocks.0.attn.hook_z", Fn: senderOnly}}, "blocks.0.attn_out")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := sent.Get("blocks.0.attn_out")
	before, _ := base.Get("blocks.0.attn_out")
	addDelta := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		for i := range x.Len() {
			setAt(x, i, atDense(x, i)+after.At(i)-before.At(i))
		}
		return x, nil
	}
	var names []string
	for _, c := range inputs {
		names = append(names, "blocks.1.attn.hook_"+string(c))
	}
	rebuilt, err := analysis.RunTokensWithHooks(m, [][]int{clean}, []analysis.Hook{{Name: "blocks.1.hook_resid_pre", Fn: addDelta}}, names...)
	if err != nil {
		t.Fatal(err)
	}
	var hooks []analysis.Hook
	for _, name := range names {
		from, _ := rebuilt.Get(name)
		hooks = append(hooks, analysis.Hook{Name: name, Fn: func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
			s := x.Shape() // (B, H, T, d)
			for i := range x.Len() {
				if head := i / (s[2] * s[3]) % s[1]; head == 1 || head == 3 {
					setAt(x, i, from.At(i))
				}
			}
			return x, nil
		}})
	}
	patched, err := analysis.RunTokensWithHooks(m, [][]int{clean}, hooks)
	if err != nil {
		t.Fatal(err)
	}
	cleanRun, err := analysis.RunTokensWithCache(m, [][]int{clean})
	if err != nil {
		t.Fatal(err)
	}
	return metric.Of(patched) - metric.Of(cleanRun)
}

func atDense(x *tensor.Dense, i int) float64 {
	if d, ok := x.Data().([]float32); ok {
		return float64(d[i])
	}
	return x.Float64s()[i]
}

// TestPathPatchRefuses: a path the model does not have is refused on one
// line naming it.
func TestPathPatchRefuses(t *testing.T) {
	m, _, _ := load()
	clean, corrupted, metric := inductionPair(1, 8, m.Config.Vocab)
	for _, c := range []struct {
		sender    [2]int
		receivers ablation.Heads
		inputs    string
		want      string
	}{
		{[2]int{2, 0}, ablation.Heads{{1, 0}}, "q", "sender head (2, 0) is not in"},
		{[2]int{1, 0}, ablation.Heads{{1, 2}}, "q", "not after the sender's layer 1"},
		{[2]int{0, 0}, nil, "q", "no receiver heads"},
		{[2]int{0, 0}, ablation.Heads{{1, 4}}, "q", "receiver head (1, 4)"},
		{[2]int{0, 0}, ablation.Heads{{1, 0}}, "qz", `inputs "qz"`},
		{[2]int{0, 0}, ablation.Heads{{1, 0}}, "qq", "name q twice"},
	} {
		_, err := analysis.PathPatch(m, [][]int{clean}, [][]int{corrupted}, metric, c.sender, c.receivers, c.inputs)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v to %v's %s: error %v, want one line with %q", c.sender, c.receivers, c.inputs, err, c.want)
		}
	}
}

func setAt(x *tensor.Dense, i int, v float64) {
	switch d := x.Data().(type) {
	case []float32:
		d[i] = float32(v)
	case []float64:
		d[i] = v
	}
}
