package train

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/runlog"
)

// TestRolesFile: a run with evaluation writes one roles.jsonl line per
// evaluation (steps 6, 12, 18, 24), each with every pattern's score in
// [0, 1] for every head, and the last line equals the roles computed
// independently from the final checkpoint: each of the first runlog.RoleRows
// held-out examples run alone (batch 1) and scored by a heads.Accumulator
// at the scored query rows, within 1e-5 (float32 weights, sums over a
// different batch size).
func TestRolesFile(t *testing.T) {
	cfg := parse(t, smallYAML)
	dir := filepath.Join(t.TempDir(), "run")
	res := runOK(t, cfg, Options{Dir: dir})
	if res.RolesTime <= 0 || res.EvalTime+res.RolesTime+res.SaveTime > res.Elapsed {
		t.Errorf("head roles took %v, evaluation %v, saving %v of %v", res.RolesTime, res.EvalTime, res.SaveTime, res.Elapsed)
	}
	recs := readJSONL[runlog.RolesRecord](t, filepath.Join(dir, runlog.RolesFile))
	if len(recs) != 4 {
		t.Fatalf("%d lines, want one per evaluation (6, 12, 18, 24)", len(recs))
	}
	for i, rec := range recs {
		if rec.Step != 6*(i+1) || len(rec.Heads) != 2 {
			t.Fatalf("line %d: step %d with %d layers, want step %d with 2", i+1, rec.Step, len(rec.Heads), 6*(i+1))
		}
		for l, layer := range rec.Heads {
			if len(layer) != 2 {
				t.Fatalf("line %d layer %d: %d heads, want 2", i+1, l, len(layer))
			}
			for h, scores := range layer {
				for _, p := range heads.Patterns {
					if p == heads.MatchingBracket { // scored only on text with brackets
						if _, ok := scores[p]; ok {
							t.Errorf("line %d layer %d head %d: matching-bracket scored on reverse", i+1, l, h)
						}
						continue
					}
					if s, ok := scores[p]; !ok || s < 0 || s > 1 {
						t.Errorf("line %d layer %d head %d: %s = %v (present %v), want in [0, 1]", i+1, l, h, p, s, ok)
					}
				}
			}
		}
	}

	m, task := finalModel(t, dir, cfg)
	sep, ok := data.Separator(task)
	if !ok {
		t.Fatal("reverse has no separator")
	}
	accs := make([][]*heads.Accumulator, 2)
	for l := range accs {
		for range 2 {
			acc, err := heads.NewAccumulator(task.SeqLen(), heads.Options{Separator: sep})
			if err != nil {
				t.Fatal(err)
			}
			accs[l] = append(accs[l], acc)
		}
	}
	set := data.EvalSet(task, cfg.Train.EvalSize, cfg.Seed)
	for i := range runlog.RoleRows {
		tokens, targets, mask := set.Row(i)
		pass, err := analysis.Forward(m, tokens, targets, mask) // one sequence at a time
		if err != nil {
			t.Fatal(err)
		}
		for l := range accs {
			for h, acc := range accs[l] {
				if err := acc.Add(pass.Map(l, h), tokens, mask); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	last := recs[len(recs)-1]
	for l := range accs {
		for h, acc := range accs[l] {
			want := acc.Result().Scores
			for _, p := range heads.Patterns {
				if got := last.Heads[l][h][p]; math.Abs(got-want[p]) > 1e-5 {
					t.Errorf("step 24 layer %d head %d %s: %v in roles.jsonl, %v from the checkpoint", l, h, p, got, want[p])
				}
			}
		}
	}
}

// TestNoRolesWithoutEval: with evaluation off there is no roles.jsonl.
func TestNoRolesWithoutEval(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	runOK(t, parse(t, smallYAML, "train.eval_every=0", "train.steps=4"), Options{Dir: dir})
	if _, err := os.Stat(filepath.Join(dir, runlog.RolesFile)); !os.IsNotExist(err) {
		t.Errorf("roles.jsonl with evaluation off: %v", err)
	}
}
