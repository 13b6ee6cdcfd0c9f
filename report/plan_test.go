package report

import (
	"math"
	"slices"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/open"
)

// TestPlanPasses counts the forwards a view runs: a plain view one (the
// sequence shown is the first row of the scoring examples), the page one
// more (its held-out examples), and the page's graph summary is the
// graph of the scoring run, at its batch and length, not the model's
// context.
func TestPlanPasses(t *testing.T) {
	o := Options{Checkpoint: "../testdata/induction", Layers: Every, Heads: Every, Samples: 8, Seed: 1}
	plain, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	length := plain.Task.SeqLen()
	if want := []Pass{{Batch: 8, Length: length}}; !slices.Equal(plain.Passes, want) {
		t.Errorf("a plain view ran %v, want %v", plain.Passes, want)
	}
	o.Page = true
	page, err := build(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Passes) != 2 || page.Passes[0] != plain.Passes[0] {
		t.Errorf("the page ran %v, want the scoring run %v and the held-out examples'", page.Passes, plain.Passes[0])
	}
	d, err := page.Page()
	if err != nil {
		t.Fatal(err)
	}
	if d.GraphBatch != 8 || d.GraphLength != length {
		t.Errorf("the page's graph is of batch %d, length %d, want 8 and %d", d.GraphBatch, d.GraphLength, length)
	}
	if !slices.Equal(d.Labels, labels(page.Task, page.Sequence.Tokens)) || len(d.Labels) != length {
		t.Errorf("the page's labels are %q, want those of the sequence shown", d.Labels)
	}
}

// TestShownIsAnExampleRow: the sequence shown is row 0 of the scoring
// run, and its pass there is the pass a forward of its own gives.
func TestShownIsAnExampleRow(t *testing.T) {
	r, err := build(Options{Checkpoint: "../testdata/induction", Layers: Every, Heads: Every, Samples: 4, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Passes) != 1 {
		t.Fatalf("ran %v, want one pass", r.Passes)
	}
	op, err := open.Open("../testdata/induction", open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := r.Sequence
	alone, err := analysis.Forward(op.Model, s.Tokens, s.Targets, s.Scored)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Forward.Predictions, alone.Predictions) {
		t.Errorf("predictions %v in the shared run, %v alone", r.Forward.Predictions, alone.Predictions)
	}
	shared := r.Forward.Attention.Float64s()
	for i, w := range alone.Attention.Float64s() {
		if d := math.Abs(w - shared[i]); d > 1e-5 {
			t.Fatalf("attention value %d is %g in the shared run, %g alone", i, shared[i], w)
		}
	}
}

// TestBytesUnit: the weights' phase counts in the unit inspect's progress
// line draws as MiB.
func TestBytesUnit(t *testing.T) {
	if BytesUnit != progress.Bytes {
		t.Errorf("report.BytesUnit %q, progress.Bytes %q", BytesUnit, progress.Bytes)
	}
}
