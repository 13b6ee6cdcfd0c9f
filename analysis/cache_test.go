package analysis

import (
	"fmt"
	"slices"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// TestCacheKeepsTheRunsNumbers: a cached run of the committed (float32)
// induction model keeps its logits in float32, and every way of reading
// them (At, Row, Matrix, Float64s) gives a TapeMachine's logits of the same
// examples; each example's Pass holds its own weights. A one-example run's
// Pass and mean weights are the cache's weights themselves, not copies.
func TestCacheKeepsTheRunsNumbers(t *testing.T) {
	op := opentest.Induction(t)
	m := op.Model
	if m.Dtype != tensor.Float32 {
		t.Fatalf("the induction model is %v, want float32", m.Dtype)
	}
	for _, n := range []int{1, 3} {
		c := cached(t, m, op.Task, n, 1)
		want := opentest.Logits(t, m, c.Batch)
		if c.Logits.f32 == nil {
			t.Errorf("%d examples: the logits were widened to float64", n)
		}
		v, matrix, flat := m.Config.Vocab, c.Logits.Matrix(), c.Logits.Float64s()
		for i, w := range want {
			row, k := i/v, i%v
			if got := []float64{c.Logits.At(i), c.Logits.Row(row)[k], matrix[row][k], flat[i]}; fmt.Sprint(got) != fmt.Sprint([]float64{w, w, w, w}) {
				t.Fatalf("%d examples, logit %d: At, Row, Matrix, Float64s read %v, want %v", n, i, got, w)
			}
		}
		layer0, err := c.Get(model.AttnWeights(0))
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p, err := c.Pass(i)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Map(0, 1), layer0.Matrix(i, 1); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%d examples: Pass(%d)'s map of layer 0 head 1 is not example %d's", n, i, i)
			}
			shared := &p.Attention.Float32s()[0] == &layer0.Float32s()[0]
			if shared != (n == 1) {
				t.Errorf("%d examples: Pass(%d) shares the cache's weights: %v, want %v", n, i, shared, n == 1)
			}
		}
		pooled, err := ScoreHeads(c, op.Task, false)
		if err != nil {
			t.Fatal(err)
		}
		if shared := &pooled.Mean.Float32s()[0] == &layer0.Float32s()[0]; shared != (n == 1) {
			t.Errorf("%d examples: the mean weights share the cache's: %v, want %v", n, shared, n == 1)
		}
	}
}

// TestCacheIsInTheModelsDtype: a cached run keeps every activation in the
// model's dtype, float32 or float64, holding exactly the values a graph of
// the test's own leaves (a TapeMachine's, widened to float64 to compare);
// the logits asked by name are Cache.Logits' own memory, not a copy.
func TestCacheIsInTheModelsDtype(t *testing.T) {
	cfg := model.Config{Vocab: 11, Context: 6, DModel: 8, Heads: 2, Layers: 2, MLP: true, DFF: 16}
	b := &data.Batch{Size: 2, SeqLen: 6, Tokens: []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1},
		Targets: make([]int, 12), Mask: make([]float64, 12)}
	for _, dtype := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		m, err := model.New(cfg, dtype, 3)
		if err != nil {
			t.Fatal(err)
		}
		names := append(Circuit(m), model.LogitsActivation)
		c, err := RunWithCache(m, b, names...)
		if err != nil {
			t.Fatal(err)
		}
		want := activations(t, m, b, names)
		for _, name := range names {
			got, err := c.Get(name)
			if err != nil {
				t.Fatal(err)
			}
			if got.Dtype() != dtype {
				t.Errorf("%v model: %s is kept as %v", dtype, name, got.Dtype())
			}
			if fmt.Sprint(got.Float64s()) != fmt.Sprint(want[name]) {
				t.Errorf("%v model: %s holds %v, the graph %v", dtype, name, got.Float64s(), want[name])
			}
		}
		logits, _ := c.Get(model.LogitsActivation)
		if &logits.Float32s()[0] != &c.Logits.Float32s()[0] && &logits.Float64s()[0] != &c.Logits.Float64s()[0] {
			t.Errorf("%v model: the logits asked by name are a copy of Cache.Logits", dtype)
		}
	}
}

// activations are the named activations of one TapeMachine run of m on b,
// as float64, from a graph of the test's own.
func activations(t *testing.T, m *model.Model, b *data.Batch, names []string) map[string][]float64 {
	t.Helper()
	g, err := model.Build(m, model.BuildOptions{Batch: b.Size, SeqLen: b.SeqLen, Cache: names})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		t.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, name := range names {
		v, err := g.Activation(name)
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = model.Float64s(v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestRunWithHooks: a hook that returns its input leaves the logits bit
// for bit as a run without it; one that replaces the embeddings'
// stream (blocks.0.hook_resid_pre, TransformerLens's name) with another
// batch's of the same positions gives exactly that batch's logits, so
// every op downstream read the replacement; the hook sees the lab's name
// and the graph's layout (B*T, D).
func TestRunWithHooks(t *testing.T) {
	m, b := namesModel(t, tensor.Float32)
	other := &data.Batch{Size: 2, SeqLen: 4, Tokens: []int{8, 7, 6, 5, 4, 3, 2, 1}, Targets: make([]int, 8), Mask: make([]float64, 8)}
	plain, err := RunWithCache(m, b)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := RunWithCache(m, other, model.ResidPre(0))
	if err != nil {
		t.Fatal(err)
	}
	stream, err := theirs.Get(model.ResidPre(0))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	identity := func(name string, x *tensor.Dense) (*tensor.Dense, error) {
		seen = append(seen, fmt.Sprint(name, x.Shape()))
		return x, nil
	}
	same, err := RunWithHooks(m, b, []Hook{{"blocks.*.hook_resid_post", identity}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(same.Logits.Float32s()) != fmt.Sprint(plain.Logits.Float32s()) {
		t.Error("an identity hook changed the logits")
	}
	if want := []string{"blocks.0.resid_post(8, 8)", "blocks.1.resid_post(8, 8)"}; !slices.Equal(seen, want) {
		t.Errorf("the hook saw %v, want %v", seen, want)
	}
	replace := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		return stream.dense(), nil
	}
	swapped, err := RunWithHooks(m, b, []Hook{{"blocks.0.hook_resid_pre", replace}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(swapped.Logits.Float32s()) != fmt.Sprint(theirs.Logits.Float32s()) {
		t.Error("the logits with the other batch's embeddings hooked in are not that batch's")
	}
}
