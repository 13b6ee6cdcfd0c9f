package analysis

import (
	"fmt"
	"testing"

	"gorgonia.org/tensor"

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
			shared := &p.Attention.Data[0] == &layer0.Data[0]
			if shared != (n == 1) {
				t.Errorf("%d examples: Pass(%d) shares the cache's weights: %v, want %v", n, i, shared, n == 1)
			}
		}
		pooled, err := ScoreHeads(c, op.Task, false)
		if err != nil {
			t.Fatal(err)
		}
		if shared := &pooled.Mean.Data[0] == &layer0.Data[0]; shared != (n == 1) {
			t.Errorf("%d examples: the mean weights share the cache's: %v, want %v", n, shared, n == 1)
		}
	}
}
