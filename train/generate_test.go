package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/rundir"
)

// TestEvalGenerate: with train.eval_generate every evaluation line carries
// gen_seq_acc, equal to seq_acc (each answer token of reverse is fed the
// previous target), and gen_token_acc in [0, token_acc's neighbourhood];
// without it, neither appears; without evaluations it is refused.
func TestEvalGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gen")
	runOK(t, parse(t, smallYAML, "train.eval_generate=true"), Options{Dir: dir})
	evals := 0
	for _, l := range withoutTiming(t, dir) {
		if _, ok := l["eval_loss"]; !ok {
			continue
		}
		evals++
		gen, ok := l["gen_seq_acc"].(float64)
		tok, tokOK := l["gen_token_acc"].(float64)
		if !ok || !tokOK || gen != l["seq_acc"].(float64) || tok < 0 || tok > 1 {
			t.Errorf("evaluation line %v: want gen_seq_acc = seq_acc and gen_token_acc in [0, 1]", l)
		}
	}
	if evals != 4 {
		t.Errorf("%d evaluations, want 4", evals)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	runOK(t, parse(t, smallYAML, "train.steps=6"), Options{Dir: plain})
	for _, l := range withoutTiming(t, plain) {
		if _, ok := l["gen_seq_acc"]; ok {
			t.Errorf("gen_seq_acc without train.eval_generate: %v", l)
		}
	}
	_, err := rundir.ParseConfig("x.yaml", []byte(smallYAML), []string{"train.eval_generate=true", "train.eval_every=0"})
	if err == nil || !strings.Contains(err.Error(), "train.eval_generate = true: needs train.eval_every > 0") {
		t.Errorf("eval_generate without evaluations: %v", err)
	}
}
