package report

import (
	"fmt"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// TestLongTokensSeparator: tokens longer than the task's example, on a
// model whose positions run at any length, are compared with the task's
// separators only where the task has positions; past them the task has no
// separator, so a SEP there is misplaced and any other token is not.
func TestLongTokensSeparator(t *testing.T) {
	task, err := data.New(data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{Vocab: task.Vocab(), Context: task.SeqLen(), DModel: 16, Heads: 4, Layers: 1, Position: "rope"}
	drawn, err := example(task, cfg, given{flag: "-tokens"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	sep := analysis.Separator(task)
	for _, c := range []struct {
		extra []int
		want  int
	}{{[]int{0, 1}, -1}, {[]int{0, sep}, len(drawn.Tokens) + 1}} {
		user := append(append([]int{}, drawn.Tokens...), c.extra...)
		s, err := example(task, cfg, given{tokens: user, flag: "-tokens"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.MisplacedSep != c.want || len(s.TaskSep) != 1 || drawn.Tokens[s.TaskSep[0]] != sep {
			t.Errorf("tokens %v: misplaced separator at %d, want %d; the task's at %v", user, s.MisplacedSep, c.want, s.TaskSep)
		}
	}
}

// TestInspectDrawsNoTrainingBatch: under the default seed (1, inspect's
// and the configs'), neither the sequence shown nor any scoring example is
// a row of training's first batches (data.StepRNG, as train draws them).
// Inspect once drew them from streams 1 and 2, the streams of training
// steps 1 and 2: it showed row 0 of the first batch and scored on the
// second.
func TestInspectDrawsNoTrainingBatch(t *testing.T) {
	const seed, steps, batch, samples = 1, 8, 32, 64
	for _, tc := range []data.TaskConfig{
		{Name: "copy", Length: 8, Symbols: 16},
		{Name: "induction", Length: 24, Symbols: 32},
	} {
		task, err := data.New(tc)
		if err != nil {
			t.Fatal(err)
		}
		trained := map[string]int{}
		for s := 1; s <= steps; s++ {
			b := data.NewBatch(batch, task.SeqLen())
			if err := data.Fill(task, b, data.StepRNG(seed, s)); err != nil {
				t.Fatal(err)
			}
			for r := range b.Size {
				tokens, _, _ := b.Row(r)
				trained[fmt.Sprint(tokens)] = s
			}
		}
		cfg := model.Config{Vocab: task.Vocab(), Context: task.SeqLen(), DModel: 16, Heads: 4, Layers: 1}
		shown, err := example(task, cfg, given{flag: "-tokens"}, seed)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := trained[fmt.Sprint(shown.Tokens)]; ok {
			t.Errorf("%s: the sequence shown is a row of training step %d's batch", tc.Name, s)
		}
		scoring, err := analysis.Examples(task, samples, seed)
		if err != nil {
			t.Fatal(err)
		}
		for r := range scoring.Size {
			tokens, _, _ := scoring.Row(r)
			if s, ok := trained[fmt.Sprint(tokens)]; ok {
				t.Errorf("%s: scoring example %d is a row of training step %d's batch", tc.Name, r, s)
				break
			}
		}
	}
}
