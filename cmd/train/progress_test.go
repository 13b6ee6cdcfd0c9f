package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/runlog"
	"github.com/attnscope/attnscope/train"
)

// fakeClock is a reporter clock that advances by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// midRun is a reporter after 501 of 4000 steps at a steady 25 steps/s, with
// an evaluation at step 500.
func midRun(width int) (*reporter, train.Event) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	r := newReporter(&bytes.Buffer{}, true, width)
	r.now = clock.now
	for s := 1; s <= 500; s++ {
		ev := train.Event{Step: s, Steps: 4000, Loss: 0.5}
		if s == 500 {
			ev.Eval = &runlog.EvalRecord{Step: 500, TokenAcc: 0.9876, SeqAcc: 0.875}
		}
		r.observe(ev)
		clock.t = clock.t.Add(40 * time.Millisecond)
	}
	ev := train.Event{Step: 501, Steps: 4000, Loss: 0.123456}
	r.observe(ev)
	return r, ev
}

// TestProgressLineWidths is the golden progress line at several terminal
// widths: it never reaches the last column (so it never wraps), and fields
// go least important first.
func TestProgressLineWidths(t *testing.T) {
	cases := []struct {
		width int
		want  string
	}{
		{200, "step 501/4000 [===>                    ] loss 0.1235 tok_acc 0.988 seq_acc 0.875 25.0 steps/s ETA 2m20s"},
		{100, "step 501/4000 [==>                 ] loss 0.1235 tok_acc 0.988 seq_acc 0.875 25.0 steps/s ETA 2m20s"},
		{80, "step 501/4000 [=>            ] loss 0.1235 seq_acc 0.875 25.0 steps/s ETA 2m20s"},
		{60, "step 501/4000 loss 0.1235 seq_acc 0.875 ETA 2m20s"},
		{40, "step 501/4000 loss 0.1235 ETA 2m20s"},
		{20, "step 501/4000"},
		{10, "step 501/"},
		{0, "step 501/4000 [=>            ] loss 0.1235 seq_acc 0.875 25.0 steps/s ETA 2m20s"}, // unknown: 80
	}
	for _, c := range cases {
		r, ev := midRun(c.width)
		got := r.line(ev)
		if got != c.want {
			t.Errorf("width %d:\n got %q\nwant %q", c.width, got, c.want)
		}
		if w := max(c.width, progress.DefaultWidth*btoi(c.width <= 0)); len(got) >= w {
			t.Errorf("width %d: line is %d characters, would reach the last column", c.width, len(got))
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProgressResize: a SIGWINCH (resize) redraws the last line at once at
// the new width.
func TestProgressResize(t *testing.T) {
	r, _ := midRun(200)
	var out bytes.Buffer
	r.w = &out
	r.resize(40)
	if want := "\rstep 501/4000 loss 0.1235 ETA 2m20s\x1b[K"; out.String() != want {
		t.Errorf("resize drew %q, want %q", out.String(), want)
	}
}

// TestProgressETASmoothed: after a steady 100 steps/s the machine slows to
// 20 steps/s. The ETA follows the slowdown gradually, never jumping by more
// than a third from one redraw to the next, and ends near the true rate.
func TestProgressETASmoothed(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := newReporter(&bytes.Buffer{}, true, 200)
	r.now = clock.now
	prev := 0.0
	for s := 1; s <= 3000; s++ {
		r.observe(train.Event{Step: s, Steps: 100000})
		if s <= 1000 {
			clock.t = clock.t.Add(10 * time.Millisecond)
		} else {
			clock.t = clock.t.Add(50 * time.Millisecond)
		}
		rate, ok := r.rate.PerSecond()
		if !ok {
			continue
		}
		if prev != 0 && math.Abs(rate-prev)/prev > 1.0/3 {
			t.Fatalf("step %d: rate jumped from %.1f to %.1f steps/s", s, prev, rate)
		}
		prev = rate
	}
	if prev < 19 || prev > 22 {
		t.Errorf("rate after 2000 slow steps = %.2f steps/s, want about 20", prev)
	}
}

// TestProgressETAEarlyNotOptimistic: steps run at 100/s, but every 100th
// step carries a 2 s evaluation. Before the first evaluation the ETA cannot
// know; once one has been paid for, the ETA must account for it (the true
// rate is 100 steps / 3 s = 33 steps/s), not report the raw 100 steps/s.
func TestProgressETAEarlyNotOptimistic(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := newReporter(&bytes.Buffer{}, true, 200)
	r.now = clock.now
	for s := 1; s <= 250; s++ {
		clock.t = clock.t.Add(10 * time.Millisecond)
		if s%100 == 0 {
			clock.t = clock.t.Add(2 * time.Second)
		}
		r.observe(train.Event{Step: s, Steps: 1000})
	}
	rate, _ := r.rate.PerSecond()
	if rate > 50 {
		t.Errorf("rate at step 250 = %.1f steps/s; with the evaluations the run makes about 33", rate)
	}
}

// TestProgressHugeRun: a run of a billion steps at a crawl shows a bounded
// ETA, not a negative overflowed duration.
func TestProgressHugeRun(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := newReporter(&bytes.Buffer{}, true, 200)
	r.now = clock.now
	r.observe(train.Event{Step: 1, Steps: 2_000_000_000})
	clock.t = clock.t.Add(time.Hour)
	ev := train.Event{Step: 2, Steps: 2_000_000_000}
	r.observe(ev)
	if line := r.line(ev); !strings.HasSuffix(line, "ETA > 999d") || strings.Contains(line, "-") {
		t.Errorf("line %q, want it to end in ETA > 999d", line)
	}
}

// TestReporterTerminal: on a terminal the reporter redraws one line (carriage
// return, erase to end of line) and ends it with a newline.
func TestReporterTerminal(t *testing.T) {
	var out bytes.Buffer
	r := newReporter(&out, true, 200)
	r.observe(train.Event{Step: 1, Steps: 4, Loss: 2})
	r.observe(train.Event{Step: 2, Steps: 4, Loss: 1.5})
	r.observe(train.Event{Step: 4, Steps: 4, Loss: 0.25, Eval: &runlog.EvalRecord{Step: 4, TokenAcc: 0.5, SeqAcc: 0.125}})
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

// plainOutput is what the reporter writes off a terminal for a run of steps
// steps taking stepTime each and 1000 positions a step, evaluated as evals
// says.
func plainOutput(steps int, stepTime time.Duration, evals map[int]train.Event) string {
	var out bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	r := newReporter(&out, false, 0)
	r.now = clock.now
	for s := 1; s <= steps; s++ {
		ev := evals[s]
		ev.Step, ev.Steps, ev.Loss, ev.Tokens, ev.Elapsed = s, steps, 1, 1000, time.Duration(s)*stepTime
		r.observe(ev)
		clock.t = clock.t.Add(stepTime)
	}
	r.finish()
	return out.String()
}

// TestReporterPlain: off a terminal, a 50-second run prints a progress line
// every 10 s (not every tenth: that would be every 5 s) and at the last
// step, with the elapsed time, the ETA and the throughput, and every
// evaluation with its figures at the other lengths.
func TestReporterPlain(t *testing.T) {
	evals := map[int]train.Event{
		500: {Eval: &runlog.EvalRecord{Step: 500, EvalLoss: 0.5, TokenAcc: 0.75, SeqAcc: 0.25},
			AtLength: []runlog.EvalRecord{{Step: 500, EvalLength: 12, EvalLoss: 2, TokenAcc: 0.28}}},
	}
	want := `step 201/1000 (20%)  loss 1.0000  elapsed 10s  ETA 40s  20.0k tok/s
step 401/1000 (40%)  loss 1.0000  elapsed 20s  ETA 30s  20.0k tok/s
step 500/1000  eval_loss 0.5000  token_acc 0.7500  seq_acc 0.2500
  at length 12: eval_loss 2.0000  token_acc 0.2800  seq_acc 0.0000
step 601/1000 (60%)  loss 1.0000  elapsed 30s  ETA 20s  20.0k tok/s
step 801/1000 (80%)  loss 1.0000  elapsed 40s  ETA 10s  20.0k tok/s
step 1000/1000 (100%)  loss 1.0000  elapsed 50s  ETA 0s  20.0k tok/s
`
	if got := plainOutput(1000, 50*time.Millisecond, evals); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestReporterPlainRate: progress lines come every tenth of the run or every
// 10 s, whichever is rarer, and at the last step, whatever log_every is.
func TestReporterPlainRate(t *testing.T) {
	cases := []struct {
		steps    int
		stepTime time.Duration
		want     int // progress lines
	}{
		{100, 5 * time.Second, 10},       // a tenth takes 50 s
		{1000, 50 * time.Millisecond, 5}, // a tenth takes 5 s: every 10 s
		{100, 30 * time.Millisecond, 1},  // a 3-second run: the last step only
	}
	for _, c := range cases {
		out := plainOutput(c.steps, c.stepTime, nil)
		if got := strings.Count(out, " tok/s\n"); got != c.want || !strings.HasPrefix(out[strings.LastIndex(out[:len(out)-1], "\n")+1:], fmt.Sprintf("step %d/%d (100%%)", c.steps, c.steps)) {
			t.Errorf("%d steps of %v: %d progress lines, want %d ending at the last step:\n%s", c.steps, c.stepTime, got, c.want, out)
		}
	}
}

// TestEvalFigures: a text's evaluation reads in bits per character, or
// perplexity through a tokenizer, in place of its meaningless sequence
// accuracy, in the log lines, the summary and the terminal's line; a
// perplexity prints two decimals under 100, whole numbers under a million,
// then three significant digits.
func TestEvalFigures(t *testing.T) {
	bits, perplexity, large, huge := 1.5, 20.25, 26614.2311, 3.2712e9
	cases := []struct {
		rec        runlog.EvalRecord
		line, term string
	}{
		{runlog.EvalRecord{EvalLoss: 1, TokenAcc: 0.5, SeqAcc: 0.25}, "eval_loss 1.0000  token_acc 0.5000  seq_acc 0.2500", "seq_acc 0.250"},
		{runlog.EvalRecord{EvalLoss: 1, TokenAcc: 0.5, BitsPerChar: &bits}, "eval_loss 1.0000  token_acc 0.5000  bits_per_char 1.5000", "bits_per_char 1.500"},
		{runlog.EvalRecord{EvalLoss: 3, TokenAcc: 0.5, Perplexity: &perplexity}, "eval_loss 3.0000  token_acc 0.5000  perplexity 20.25", "perplexity 20.25"},
		{runlog.EvalRecord{EvalLoss: 10.19, TokenAcc: 0, Perplexity: &large}, "eval_loss 10.1900  token_acc 0.0000  perplexity 26614", "perplexity 26614"},
		{runlog.EvalRecord{EvalLoss: 21.9, TokenAcc: 0, Perplexity: &huge}, "eval_loss 21.9000  token_acc 0.0000  perplexity 3.27e+09", "perplexity 3.27e+09"},
	}
	for _, c := range cases {
		if got := evalFigures(&c.rec); got != c.line {
			t.Errorf("evalFigures = %q, want %q", got, c.line)
		}
		r := newReporter(&bytes.Buffer{}, true, 200)
		r.lastEval = &c.rec
		if line := r.line(train.Event{Step: 1, Steps: 2}); !strings.Contains(line, c.term) || (c.rec.SeqAcc == 0 && strings.Contains(line, "seq_acc")) {
			t.Errorf("terminal line %q, want %q in it and no seq_acc beside it", line, c.term)
		}
	}
}

// TestProgressKeepsTheTaskMetric: where fields must go, a run scored by
// token accuracy (induction) drops seq_acc before tok_acc; other runs drop
// tok_acc first.
func TestProgressKeepsTheTaskMetric(t *testing.T) {
	for _, tokenMetric := range []bool{false, true} {
		r, ev := midRun(80)
		r.tokenMetric = tokenMetric
		line := r.line(ev)
		kept, dropped := "seq_acc", "tok_acc"
		if tokenMetric {
			kept, dropped = dropped, kept
		}
		if !strings.Contains(line, kept) || strings.Contains(line, dropped) {
			t.Errorf("token metric %t: %q, want %s kept and %s dropped", tokenMetric, line, kept, dropped)
		}
	}
}

// TestSummaryWording: a sub-second run reads in milliseconds, not "0s", and
// the resume hint names the binary that ran when it was not go run.
func TestSummaryWording(t *testing.T) {
	if got := duration(13*time.Millisecond+400*time.Microsecond, 100*time.Millisecond); got != 13*time.Millisecond {
		t.Errorf("13.4ms: %v", got)
	}
	if got := duration(2345*time.Millisecond, 100*time.Millisecond); got != 2300*time.Millisecond {
		t.Errorf("2.345s: %v", got)
	}
	saved := os.Args[0]
	defer func() { os.Args[0] = saved }()
	os.Args[0] = "/usr/local/bin/train"
	if got := selfCommand(); got != "/usr/local/bin/train" {
		t.Errorf("from a binary: %q", got)
	}
	os.Args[0] = "/tmp/go-build123/b001/exe/train"
	if got := selfCommand(); got != "go run ./cmd/train" {
		t.Errorf("from go run: %q", got)
	}
}

// TestWrapFiles: the summary's files wrap within 80 columns, the most a
// fine-tuning run lists (three tokenizer copies and a state of a long run)
// included.
func TestWrapFiles(t *testing.T) {
	files := []string{"config.yaml", "init-tokenizer.json", "init-vocab.json", "init-merges.txt", "metrics.jsonl", "roles.jsonl",
		"circuits.jsonl", "checkpoint.safetensors", "best.safetensors", "state-1000000.safetensors"}
	got := wrapFiles(files, 80)
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		if len(line) > 80 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
	if strings.Join(strings.Fields(strings.ReplaceAll(got, "files:", "")), " ") != strings.Join(files, " ") {
		t.Errorf("wrapped list %q lost or reordered files", got)
	}
}
