package train

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/runlog"
)

// TestCircuitsFile: an induction run writes one circuits.jsonl line per
// evaluation with every head's prefix-matching and copying scores and the
// ICL score, and the last line equals the metrics package analysis computes
// from the final checkpoint (1e-9: the same code on the same weights); a
// task other than induction gets no ICL score.
func TestCircuitsFile(t *testing.T) {
	cfg := parse(t, `
seed: 3
task: {name: induction, length: 12, symbols: 16}
model: {d_model: 16, heads: 2, layers: 2}
train: {batch_size: 8, steps: 12, log_every: 0, eval_every: 4, eval_size: 40, checkpoint_every: 12}
`)
	dir := filepath.Join(t.TempDir(), "run")
	runOK(t, cfg, Options{Dir: dir})
	recs := readJSONL[runlog.CircuitsRecord](t, filepath.Join(dir, runlog.CircuitsFile))
	if len(recs) != 3 || recs[0].Step != 4 || recs[2].Step != 12 {
		t.Fatalf("%d lines (%+v), want steps 4, 8, 12", len(recs), recs)
	}
	last := recs[2]
	m, task := finalModel(t, dir, cfg)
	prefix, err := analysis.PrefixMatching(m, runlog.RoleRows, cfg.Seed, analysis.ProbeStream)
	if err != nil {
		t.Fatal(err)
	}
	hs, err := analysis.Heads(m)
	if err != nil {
		t.Fatal(err)
	}
	copying, err := analysis.CopyingScores(m, hs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := analysis.Draw(task, runlog.RoleRows, cfg.Seed, analysis.ProbeStream)
	if err != nil {
		t.Fatal(err)
	}
	c, err := analysis.RunWithCache(m, b)
	if err != nil {
		t.Fatal(err)
	}
	icl, err := analysis.ICL(c, task)
	if err != nil {
		t.Fatal(err)
	}
	if last.ICL == nil || math.Abs(*last.ICL-icl.Score) > 1e-9 {
		t.Errorf("ICL %v in the file, %v from the checkpoint", last.ICL, icl.Score)
	}
	for _, c := range copying {
		if got := last.Copying[c.Layer][c.Head]; math.Abs(got-c.Score) > 1e-9 {
			t.Errorf("L%d H%d copying %v in the file, %v from the checkpoint", c.Layer, c.Head, got, c.Score)
		}
		if got, want := last.PrefixMatching[c.Layer][c.Head], prefix[c.Layer][c.Head]; math.Abs(got-want) > 1e-9 {
			t.Errorf("L%d H%d prefix matching %v in the file, %v from the checkpoint", c.Layer, c.Head, got, want)
		}
	}
	other := filepath.Join(t.TempDir(), "reverse")
	runOK(t, parse(t, smallYAML, "train.steps=6"), Options{Dir: other})
	for _, rec := range readJSONL[runlog.CircuitsRecord](t, filepath.Join(other, runlog.CircuitsFile)) {
		if rec.ICL != nil || len(rec.Copying) != 2 {
			t.Errorf("reverse run: %+v, want copying for 2 layers and no ICL", rec)
		}
	}
}
