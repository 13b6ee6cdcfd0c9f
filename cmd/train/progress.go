package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/attnscope/attnscope/train"
)

// reporter turns training events into output: a single redrawn progress line
// on a terminal, or plain log lines (one per logged step and evaluation) when
// stdout is a pipe or a file, so CI logs stay readable.
type reporter struct {
	w        io.Writer
	terminal bool
	// header is printed before the first step's output, so a run refused
	// before it starts prints nothing but its error.
	header   string
	start    time.Time // wall time of the first step of this process
	first    int       // step the process started from (resume)
	lastDraw time.Time
	drawn    bool
	lastEval *train.EvalRecord
}

func newReporter(w io.Writer, terminal bool) *reporter {
	return &reporter{w: w, terminal: terminal}
}

// observe is the train.Observer.
func (r *reporter) observe(ev train.Event) {
	now := time.Now()
	if r.start.IsZero() {
		r.start, r.first = now, ev.Step-1
		if r.header != "" {
			fmt.Fprintln(r.w, r.header)
		}
	}
	if ev.Eval != nil {
		r.lastEval = ev.Eval
	}
	if !r.terminal {
		if ev.Train != nil {
			fmt.Fprintf(r.w, "step %d/%d  loss %.4f  lr %.3g  %.0f tok/s\n", ev.Step, ev.Steps, ev.Train.Loss, ev.Train.LR, ev.Train.TokensPerS)
		}
		if ev.Eval != nil {
			fmt.Fprintf(r.w, "step %d/%d  eval_loss %.4f  token_acc %.4f  seq_acc %.4f\n", ev.Step, ev.Steps, ev.Eval.EvalLoss, ev.Eval.TokenAcc, ev.Eval.SeqAcc)
		}
		return
	}
	// Redrawing a terminal line costs more than a toy step: 10 times a second
	// is enough for the eye, and the last step is always drawn.
	if now.Sub(r.lastDraw) < 100*time.Millisecond && ev.Step != ev.Steps && ev.Eval == nil {
		return
	}
	r.lastDraw = now
	r.drawn = true
	fmt.Fprint(r.w, "\r"+r.line(ev, now)+"\x1b[K")
}

// line renders: step 120/1000 [=====>    ] loss 0.1234 seq_acc 0.98 12.3 steps/s ETA 1m10s
func (r *reporter) line(ev train.Event, now time.Time) string {
	const width = 24
	filled := width * ev.Step / max(ev.Steps, 1)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	s := fmt.Sprintf("step %d/%d [%s] loss %.4f", ev.Step, ev.Steps, bar, ev.Loss)
	if r.lastEval != nil {
		s += fmt.Sprintf(" tok_acc %.3f seq_acc %.3f", r.lastEval.TokenAcc, r.lastEval.SeqAcc)
	}
	done := ev.Step - r.first
	if elapsed := now.Sub(r.start).Seconds(); done > 1 && elapsed > 0 {
		rate := float64(done-1) / elapsed
		eta := time.Duration(float64(ev.Steps-ev.Step) / rate * float64(time.Second)).Round(time.Second)
		s += fmt.Sprintf(" %.1f steps/s ETA %s", rate, eta)
	}
	return s
}

// finish ends the progress line so that what follows starts on a new line.
func (r *reporter) finish() {
	if r.terminal && r.drawn {
		fmt.Fprintln(r.w)
	}
}
