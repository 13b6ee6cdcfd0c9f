package ablation

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
)

// inductionRun is a run of configs/induction.yaml committed as test data
// (config.yaml, metrics.jsonl, checkpoint.safetensors, roles.jsonl; 3000
// steps, seed 1). Regenerate it, bit for bit, with
//
//	go run ./cmd/train -config configs/induction.yaml -run /tmp/induction
//	cp /tmp/induction/{config.yaml,metrics.jsonl,roles.jsonl,checkpoint.safetensors} testdata/induction/
const inductionRun = "../testdata/induction"

// loadInduction loads the committed checkpoint on path and its held-out set.
func loadInduction(t *testing.T, path layers.Path) (*model.Model, *data.Batch) {
	t.Helper()
	op := opentest.Induction(t)
	op.Model.Config.Attention = string(path)
	return op.Model, data.EvalSet(op.Task, op.Run.Train.EvalSize, op.Run.Seed)
}

// lastEval is the last evaluation line of the committed run's metrics.jsonl,
// written by train's own evaluator.
func lastEval(t *testing.T) Score {
	t.Helper()
	f, err := os.Open(inductionRun + "/metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last Score
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec struct {
			EvalLoss *float64 `json:"eval_loss"`
			TokenAcc float64  `json:"token_acc"`
			SeqAcc   float64  `json:"seq_acc"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.EvalLoss != nil {
			last = Score{Loss: *rec.EvalLoss, TokenAcc: rec.TokenAcc, ExactMatch: rec.SeqAcc}
		}
	}
	return last
}

// TestInductionHeadsMatter: on the trained induction model, on both paths
// and with zero and mean ablation, the intact scores equal train's own
// last evaluation (loss within 1e-4, accuracies exactly), and removing the
// previous-token head (layer 0) or the induction head (layer 1) costs far
// more than removing any other head. Margin asserted: each of the two
// raises the loss by at least 1 nat and drops exact match by at least 0.5,
// while every other head raises the loss by at most 0.05 (20x less) and
// moves exact match by at most 0.02. Progress hears each head done.
func TestInductionHeadsMatter(t *testing.T) {
	want := lastEval(t)
	for _, path := range layers.Paths {
		for _, mode := range []Mode{Zero, Mean} {
			t.Run(string(path)+"/"+string(mode), func(t *testing.T) {
				m, set := loadInduction(t, path)
				var heard []int // heads done, as progress hears them
				table, err := Run(m, set, mode, nil, func(done, total int) {
					if total != m.Config.Layers*m.Config.Heads {
						t.Errorf("progress of %d heads, the model has %d", total, m.Config.Layers*m.Config.Heads)
					}
					heard = append(heard, done)
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(heard) != len(table.Rows)+1 || heard[0] != 0 || heard[len(heard)-1] != len(table.Rows) {
					t.Errorf("progress heard %v, want 0 to %d, once a head", heard, len(table.Rows))
				}
				in := table.Intact
				if math.Abs(in.Loss-want.Loss) > 1e-4 || in.TokenAcc != want.TokenAcc || in.ExactMatch != want.ExactMatch {
					t.Errorf("intact %+v, train's last evaluation %+v", in, want)
				}
				if len(table.Rows) != m.Config.Layers*m.Config.Heads || table.Examples != set.Size || table.Mode != mode {
					t.Fatalf("table of %d rows, %d examples, mode %s", len(table.Rows), table.Examples, table.Mode)
				}
				top := map[int]bool{}
				for i, row := range table.Rows {
					if i > 0 && row.DeltaLoss > table.Rows[i-1].DeltaLoss {
						t.Errorf("row %d (Δloss %.4f) after a smaller one (%.4f)", i, row.DeltaLoss, table.Rows[i-1].DeltaLoss)
					}
					if math.Abs(row.Loss-in.Loss-row.DeltaLoss) > 1e-12 || math.Abs(row.ExactMatch-in.ExactMatch-row.DeltaExactMatch) > 1e-12 {
						t.Errorf("row %d: deltas %+v do not match its scores", i, row)
					}
					if i < 2 {
						top[row.Layer] = true
						if row.DeltaLoss < 1 || row.DeltaExactMatch > -0.5 {
							t.Errorf("key head layer %d head %d: Δloss %.4f, Δexact %.4f; want >= 1 and <= -0.5", row.Layer, row.Head, row.DeltaLoss, row.DeltaExactMatch)
						}
					} else if row.DeltaLoss > 0.05 || math.Abs(row.DeltaExactMatch) > 0.02 {
						t.Errorf("other head layer %d head %d: Δloss %.4f, Δexact %.4f; want <= 0.05 and within 0.02", row.Layer, row.Head, row.DeltaLoss, row.DeltaExactMatch)
					}
				}
				if !top[0] || !top[1] {
					t.Errorf("the two most important heads are in layers %v, want one in layer 0 and one in layer 1", top)
				}
			})
		}
	}
}

// TestRunOnSomeHeads: given heads, Run removes those alone (progress
// counts them, not the model's) and each row equals the same head's row of
// the run over every head, in both modes.
func TestRunOnSomeHeads(t *testing.T) {
	m, set := loadInduction(t, layers.Fused)
	some := Heads{{1, 3}, {0, 1}}
	for _, mode := range []Mode{Zero, Mean} {
		all, err := Run(m, set, mode, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		var totals []int
		picked, err := Run(m, set, mode, some, func(done, total int) { totals = append(totals, total) })
		if err != nil {
			t.Fatal(err)
		}
		if len(picked.Rows) != len(some) || len(totals) != len(some)+1 || totals[0] != len(some) {
			t.Fatalf("%s: %d rows, progress totals %v; want %d rows, each total %d", mode, len(picked.Rows), totals, len(some), len(some))
		}
		for _, row := range picked.Rows {
			i := slices.IndexFunc(all.Rows, func(r Row) bool { return r.Layer == row.Layer && r.Head == row.Head })
			if i < 0 || !slices.Contains(some, [2]int{row.Layer, row.Head}) || all.Rows[i] != row {
				t.Errorf("%s: row %+v, the run over every head has %+v", mode, row, all.Rows[max(i, 0)])
			}
		}
	}
}

// TestParseMode accepts the two modes and names them in the error.
func TestParseMode(t *testing.T) {
	for _, s := range []string{"zero", "mean"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	if _, err := ParseMode("Zero"); err == nil || !strings.Contains(err.Error(), `ablation mode "Zero": want zero or mean`) {
		t.Errorf("ParseMode(Zero): %v", err)
	}
}
