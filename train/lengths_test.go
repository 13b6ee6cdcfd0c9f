package train

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// TestEvalLengths: with train.eval_lengths, every evaluation writes one
// extra line per length, after the main one and tagged eval_length; listing
// the trained length reproduces the main evaluation's numbers exactly (the
// same set, drawn from the same seed, through a graph built the same way),
// and a longer length gives other numbers. A resumed run keeps the lines.
func TestEvalLengths(t *testing.T) {
	cfg := parse(t, smallYAML, "model.position=rope", "task.min_length=2", "train.eval_lengths=[3, 6]")
	dir := filepath.Join(t.TempDir(), "run")
	runOK(t, cfg, Options{Dir: dir})
	lines := withoutTiming(t, dir)
	var mains, at3, at6 []map[string]any
	for i, l := range lines {
		if _, ok := l["eval_loss"]; !ok {
			continue
		}
		switch l["eval_length"] {
		case nil:
			mains = append(mains, l)
		case 3.0:
			at3 = append(at3, l)
			if lines[i-1]["eval_length"] != nil || lines[i-1]["eval_loss"] == nil {
				t.Errorf("line %d: the length-3 evaluation does not follow the main one", i)
			}
		case 6.0:
			at6 = append(at6, l)
		default:
			t.Errorf("line %d: eval_length %v", i, l["eval_length"])
		}
	}
	if len(mains) != 4 || len(at3) != 4 || len(at6) != 4 {
		t.Fatalf("%d main, %d length-3 and %d length-6 evaluations, want 4 of each", len(mains), len(at3), len(at6))
	}
	for i := range mains {
		// The main set mixes lengths 2..3, so it differs from the all-3 set;
		// compare the all-3 set with a run trained on length 3 alone below.
		if at6[i]["eval_loss"] == at3[i]["eval_loss"] {
			t.Errorf("evaluation %d: lengths 3 and 6 give the same loss %v", i, at3[i]["eval_loss"])
		}
	}
	fixed := filepath.Join(t.TempDir(), "fixed")
	runOK(t, parse(t, smallYAML, "model.position=rope", "train.eval_lengths=[3]"), Options{Dir: fixed})
	var main, again map[string]any
	for _, l := range withoutTiming(t, fixed) {
		if l["step"] == 24.0 && l["eval_loss"] != nil {
			if l["eval_length"] == nil {
				main = l
			} else {
				again = l
			}
		}
	}
	for _, key := range []string{"eval_loss", "token_acc", "seq_acc"} {
		if main[key] != again[key] {
			t.Errorf("%s at the trained length: main %v, eval_lengths %v", key, main[key], again[key])
		}
	}
}

// TestEvalLengthsErrors: an eval length the learned position table does
// not reach, one listed twice, one the task refuses, or eval lengths with
// evaluation off are one-line errors naming the key and the numbers.
func TestEvalLengthsErrors(t *testing.T) {
	for _, c := range []struct {
		sets []string
		want string
	}{
		{[]string{"train.eval_lengths=[6]"}, "train.eval_lengths: 6 needs 12 positions, beyond the 6 of the learned position table"},
		{[]string{"model.position=alibi", "train.eval_lengths=[6, 6]"}, "train.eval_lengths: 6 is listed twice"},
		{[]string{"model.position=none", "train.eval_lengths=[0]"}, "train.eval_lengths: 0: task.length = 0: must be in [1, 512]"},
		{[]string{"model.position=none", "train.eval_every=0", "train.eval_lengths=[4]"}, "train.eval_lengths = [4]: needs train.eval_every > 0"},
		{[]string{"train.eval_lengths=6"}, "train.eval_lengths: want a list such as [12, 16] (an integer each), got a value"},
	} {
		_, err := rundir.ParseConfig("test.yaml", []byte(smallYAML), c.sets)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", c.sets, err, c.want)
		}
	}
}

// TestLogLimitsDoNotOverflow: train.steps is bounded, and the log limits of
// the largest run it allows stay positive (train.steps = 2e16 made them
// wrap to negative numbers, so such a run could never resume).
func TestLogLimitsDoNotOverflow(t *testing.T) {
	if _, err := rundir.ParseConfig("test.yaml", []byte(smallYAML), []string{"train.steps=20000000000000000"}); err == nil || !strings.Contains(err.Error(), "train.steps = 20000000000000000: must be at most 1000000000000") {
		t.Errorf("train.steps 2e16: %v", err)
	}
	if m := runlog.MaxMetricsBytes(rundir.MaxSteps, rundir.MaxEvalLengths); m <= 0 || m < int64(rundir.MaxSteps) {
		t.Errorf("MaxMetricsBytes of the largest run: %d", m)
	}
	if r := runlog.MaxRolesBytes(rundir.MaxSteps, 4096); r <= 0 || r < int64(rundir.MaxSteps) {
		t.Errorf("MaxRolesBytes of the largest run: %d", r)
	}
}
