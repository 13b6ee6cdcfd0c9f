package report

import (
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
	drawn, err := example(task, cfg, nil, "-tokens", 1)
	if err != nil {
		t.Fatal(err)
	}
	sep := analysis.Separator(task)
	for _, c := range []struct {
		extra []int
		want  int
	}{{[]int{0, 1}, -1}, {[]int{0, sep}, len(drawn.Tokens) + 1}} {
		user := append(append([]int{}, drawn.Tokens...), c.extra...)
		s, err := example(task, cfg, user, "-tokens", 1)
		if err != nil {
			t.Fatal(err)
		}
		if s.MisplacedSep != c.want || len(s.TaskSep) != 1 || drawn.Tokens[s.TaskSep[0]] != sep {
			t.Errorf("tokens %v: misplaced separator at %d, want %d; the task's at %v", user, s.MisplacedSep, c.want, s.TaskSep)
		}
	}
}
