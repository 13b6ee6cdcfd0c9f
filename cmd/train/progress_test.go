package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/train"
)

// TestReporterTerminal: on a terminal the reporter redraws one line (carriage
// return, erase to end of line) with the step, a bar, the loss, the last
// evaluation's accuracies, a rate and an ETA, and ends it with a newline.
func TestReporterTerminal(t *testing.T) {
	var out bytes.Buffer
	r := newReporter(&out, true)
	r.observe(train.Event{Step: 1, Steps: 4, Loss: 2})
	r.observe(train.Event{Step: 2, Steps: 4, Loss: 1.5})
	r.observe(train.Event{Step: 4, Steps: 4, Loss: 0.25, Eval: &train.EvalRecord{Step: 4, TokenAcc: 0.5, SeqAcc: 0.125}})
	r.finish()
	s := out.String()
	last := s[strings.LastIndex(s, "\r")+1:]
	for _, want := range []string{"step 4/4 [========================] loss 0.2500 tok_acc 0.500 seq_acc 0.125", " steps/s ETA 0s", "\x1b[K\n"} {
		if !strings.Contains(last, want) {
			t.Errorf("last redraw %q lacks %q", last, want)
		}
	}
	if strings.Count(s, "\n") != 1 {
		t.Errorf("%d newlines in %q, want only the final one", strings.Count(s, "\n"), s)
	}
}

// TestReporterPlain: off a terminal, only logged steps and evaluations print,
// one line each.
func TestReporterPlain(t *testing.T) {
	var out bytes.Buffer
	r := newReporter(&out, false)
	r.observe(train.Event{Step: 1, Steps: 10, Loss: 2})
	r.observe(train.Event{Step: 5, Steps: 10, Loss: 1, Train: &train.TrainRecord{Step: 5, Loss: 1, LR: 0.003, TokensPerS: 1000}})
	r.observe(train.Event{Step: 5, Steps: 10, Eval: &train.EvalRecord{Step: 5, EvalLoss: 0.5, TokenAcc: 0.75, SeqAcc: 0.25}})
	r.finish()
	want := "step 5/10  loss 1.0000  lr 0.003  1000 tok/s\nstep 5/10  eval_loss 0.5000  token_acc 0.7500  seq_acc 0.2500\n"
	if out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
