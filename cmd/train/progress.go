package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/runlog"
	"github.com/attnscope/attnscope/train"
)

// reporter turns training events into output: a single redrawn progress line
// on a terminal, fitted to its width, or plain log lines when stdout is a
// pipe or a file (nohup, CI, tee): a progress line with the elapsed time and
// the ETA at most every tenth of the run and every plainEvery (whichever is
// rarer) and at the last step, and the figures of every evaluation.
type reporter struct {
	mu       sync.Mutex // observe runs on the training goroutine, resize on the signal one
	w        io.Writer
	terminal bool
	width    int // terminal columns; <= 0 means unknown (progress.DefaultWidth)
	now      func() time.Time
	// header is printed before the first step's output, so a run refused
	// before it starts prints nothing but its error.
	header   string
	start    time.Time // wall time of the first step of this process
	first    int       // step the process started from (resume)
	lastDraw time.Time
	drawn    bool
	last     train.Event // the newest event, redrawn on resize
	lastEval *runlog.EvalRecord
	rate     progress.Rate
	// printedAt and printedStep are when (the clock) and at which step the
	// last plain progress line was written.
	printedAt   time.Time
	printedStep int
	// tokenMetric keeps tok_acc on the line longer than seq_acc, for a task
	// whose target is token accuracy (induction); otherwise tok_acc goes
	// first.
	tokenMetric bool
}

func newReporter(w io.Writer, terminal bool, width int) *reporter {
	return &reporter{w: w, terminal: terminal, width: width, now: time.Now}
}

// observe is the train.Observer.
func (r *reporter) observe(ev train.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if r.start.IsZero() {
		r.start, r.first = now, ev.Step-1
		r.printedAt, r.printedStep = now, r.first
		if r.header != "" {
			fmt.Fprintln(r.w, r.header)
		}
	}
	r.rate.Observe(now, int64(ev.Step))
	if ev.Eval != nil {
		r.lastEval = ev.Eval
	}
	if !r.terminal {
		r.printPlain(now, ev)
		return
	}
	r.last = ev
	// Redrawing a terminal line costs more than a toy step: 10 times a second
	// is enough for the eye, and the last step is always drawn.
	if now.Sub(r.lastDraw) < 100*time.Millisecond && ev.Step != ev.Steps && ev.Eval == nil {
		return
	}
	r.lastDraw = now
	r.draw()
}

// plainEvery is the least time between two plain progress lines: a short
// run logs its evaluations and its last step, not a line per log_every.
const plainEvery = 10 * time.Second

// printPlain writes ev's plain lines: the progress line when one is due,
// then the evaluation's figures, one line each for the trained length and
// every train.eval_lengths length.
func (r *reporter) printPlain(now time.Time, ev train.Event) {
	tenth := max(1, (ev.Steps-r.first)/10)
	if ev.Step == ev.Steps || (ev.Step-r.printedStep >= tenth && now.Sub(r.printedAt) >= plainEvery) {
		fmt.Fprintln(r.w, r.plainProgress(ev))
		r.printedAt, r.printedStep = now, ev.Step
	}
	if ev.Eval == nil {
		return
	}
	fmt.Fprintf(r.w, "step %d/%d  %s\n", ev.Step, ev.Steps, evalFigures(ev.Eval))
	for _, at := range ev.AtLength {
		fmt.Fprintf(r.w, "  at length %d: %s\n", at.EvalLength, evalFigures(&at))
	}
}

// plainProgress is a progress line for a log, e.g.
//
//	step 750/1500 (50%)  loss 1.2345  elapsed 1m10s  ETA 1m10s  29.4k tok/s
//
// The throughput is the ETA's rate (evaluations and saving included, and
// smoothed), so it does not jump with the steps an evaluation falls in.
func (r *reporter) plainProgress(ev train.Event) string {
	line := fmt.Sprintf("step %d/%d (%d%%)  loss %.4f  elapsed %s", ev.Step, ev.Steps, 100*ev.Step/max(ev.Steps, 1), ev.Loss, progress.FormatETA(ev.Elapsed.Seconds()))
	if rate, ok := r.rate.PerSecond(); ok {
		line += fmt.Sprintf("  ETA %s  %s tok/s", progress.FormatETA(float64(ev.Steps-ev.Step)/rate), thousands(rate*float64(ev.Tokens)))
	}
	return line
}

// thousands writes a throughput the way it is read: "950", "29.4k", "560k",
// "1.25M".
func thousands(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e5:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// evalFigures is an evaluation's figures: the loss, token accuracy, and
// the sequence accuracy, or on a text a language model's figure instead
// (its sequences are never entirely right).
func evalFigures(e *runlog.EvalRecord) string {
	return fmt.Sprintf("eval_loss %.4f  token_acc %.4f  %s%s", e.EvalLoss, e.TokenAcc, taskFigure(e, "%s %.4f"), generated(e))
}

// taskFigure is the figure an evaluation is read by besides the token
// accuracy, in format (a name and a value): bits_per_char or perplexity
// (printed by perplexity, whatever the format) on a text, else seq_acc.
func taskFigure(e *runlog.EvalRecord, format string) string {
	switch {
	case e.BitsPerChar != nil:
		return fmt.Sprintf(format, "bits_per_char", *e.BitsPerChar)
	case e.Perplexity != nil:
		return "perplexity " + perplexity(*e.Perplexity)
	}
	return fmt.Sprintf(format, "seq_acc", e.SeqAcc)
}

// perplexity prints a perplexity with the digits that mean something: two
// decimals under 100 (20.25), whole numbers under a million (26614: a
// pretrained model on a text unlike its own starts in the tens of
// thousands, where decimals are noise), then three significant digits
// (3.27e+09).
func perplexity(v float64) string {
	switch {
	case v < 100:
		return fmt.Sprintf("%.2f", v)
	case v < 1e6:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// resize takes a new terminal width (SIGWINCH) and redraws the line at once,
// so a narrowed terminal does not wrap it until the next step.
func (r *reporter) resize(width int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.width = width
	if r.terminal && r.drawn {
		r.draw()
	}
}

func (r *reporter) draw() {
	r.drawn = true
	fmt.Fprint(r.w, "\r"+r.line(r.last)+"\x1b[K")
}

// line renders the progress line for the terminal width, e.g.
//
//	step 120/1000 [===>       ] loss 0.1234 tok_acc 0.912 seq_acc 0.875 12.3 steps/s ETA 1m10s
//
// It is at most width-1 characters (a line filling the last column wraps on
// some terminals). When everything does not fit, fields are dropped least
// important first: tok_acc (seq_acc for a task scored by token accuracy),
// then the bar shrinks and goes, then steps/s, the other accuracy, loss and
// the ETA; the step count always stays.
func (r *reporter) line(ev train.Event) string {
	width := r.width
	if width <= 0 {
		width = progress.DefaultWidth
	}
	room := width - 1
	fields := []progress.Field{{Text: fmt.Sprintf("step %d/%d", ev.Step, ev.Steps)}, {Text: progress.BarField, Drop: 2}, {Text: fmt.Sprintf("loss %.4f", ev.Loss), Drop: 5}}
	if e := r.lastEval; e != nil {
		tok, seq := 1, 4
		if r.tokenMetric {
			tok, seq = seq, tok
		}
		fields = append(fields, progress.Field{Text: fmt.Sprintf("tok_acc %.3f", e.TokenAcc), Drop: tok}, progress.Field{Text: taskFigure(e, "%s %.3f"), Drop: seq})
	}
	if rate, ok := r.rate.PerSecond(); ok {
		fields = append(fields, progress.Field{Text: fmt.Sprintf("%.1f steps/s", rate), Drop: 3}, progress.Field{Text: "ETA " + progress.FormatETA(float64(ev.Steps-ev.Step)/rate), Drop: 6})
	}
	return progress.Fit(fields, room, func(width int) string { return progress.Bar(int64(ev.Step), int64(ev.Steps), width) })
}

// finish ends the progress line so that what follows starts on a new line.
func (r *reporter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.terminal && r.drawn {
		fmt.Fprintln(r.w)
	}
}

// generated is the autoregressive figures of an evaluation line, when the
// run writes its answers (train.eval_generate).
func generated(e *runlog.EvalRecord) string {
	if e.GenSeqAcc == nil {
		return ""
	}
	return fmt.Sprintf("  gen_token_acc %.4f  gen_seq_acc %.4f", *e.GenTokenAcc, *e.GenSeqAcc)
}
