package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
)

// saveCheckpoint saves an untrained model of task (its vocabulary and
// length fill cfg), edited by edit, with a run config naming both.
func saveCheckpoint(t *testing.T, taskConfig data.TaskConfig, cfg model.Config, edit func(*model.Model)) string {
	t.Helper()
	task, err := data.New(taskConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Vocab, cfg.Context = task.Vocab(), task.SeqLen()
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	edit(m)
	run := rundir.DefaultConfig()
	run.Task, run.Model = taskConfig, cfg
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := checkpoint.Save(path, m, run, 0); err != nil {
		t.Fatal(err)
	}
	return path
}

var copyTask = data.TaskConfig{Name: "copy", Length: 4, Symbols: 8}

// escapeCycle is the text of escapeCheckpoint: greedy writes the character
// after the one it is fed, round this cycle.
const escapeCycle = "a\x1b\a\r\u009b\u009d\u202eb"

// escapeCheckpoint is a text model over escapeCycle, whose vocabulary holds
// ESC, BEL, CR, the C1 CSI and OSC and the bidi override U+202E. Attention
// adds nothing (its output projection is zero) and no position is added,
// so the logits are lm_head·tok_emb[token]: one-hot embeddings and a head
// that maps each character to the next of the cycle.
func escapeCheckpoint(t *testing.T) (ck, text string) {
	t.Helper()
	text = filepath.Join(t.TempDir(), "escapes.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat(escapeCycle, 20)), 0o644); err != nil {
		t.Fatal(err)
	}
	file, chars, err := data.RecordText(text)
	if err != nil {
		t.Fatal(err)
	}
	taskConfig := data.TaskConfig{Name: data.Text, Path: text, Length: 8, Chars: chars, File: file}
	task, err := data.New(taskConfig)
	if err != nil {
		t.Fatal(err)
	}
	cycle, _, err := data.Encode(task, escapeCycle)
	if err != nil {
		t.Fatal(err)
	}
	cfg := model.Config{DModel: 16, Heads: 2, Layers: 1, Position: model.PositionNone, LMBias: true}
	return saveCheckpoint(t, taskConfig, cfg, func(m *model.Model) {
		emb, out, head := weights(m, "tok_emb.weight"), weights(m, "blocks.0.attn.out.weight"), weights(m, "lm_head.weight")
		for _, w := range [][]float32{emb, out, head, weights(m, "lm_head.bias")} {
			clear(w)
		}
		for k, id := range cycle {
			emb[id*cfg.DModel+id] = 1
			head[cycle[(k+1)%len(cycle)]*cfg.DModel+id] = 10
		}
	}), text
}

func weights(m *model.Model, name string) []float32 { return m.Param(name).Data().([]float32) }

// unsafeRunes lists what of s a terminal would act on: every unsafe
// character (escape.Unsafe) but newline, and invalid bytes as U+FFFD.
func unsafeRunes(s string) []rune {
	var bad []rune
	for _, r := range s {
		if r == utf8.RuneError || r != '\n' && escape.Unsafe(r) {
			bad = append(bad, r)
		}
	}
	return bad
}

// TestModelTextIsEscaped: a model that writes ESC, BEL, CR, CSI, OSC and a
// bidi override shows each as a visible escape, in a continuation (its
// prompt too), in several and in the held-out examples; -raw writes them
// byte for byte, and is refused where it does not apply.
func TestModelTextIsEscaped(t *testing.T) {
	ck, text := escapeCheckpoint(t)
	out, err := sample(t, "-checkpoint", ck, "-prompt", "a", "-n", "8")
	if want := "a" + `\x1b\x07\x0d\u009b\u009d\u202e` + "ba\n"; err != nil || out != want {
		t.Errorf("greedy from \"a\": %v %q, want %q", err, out, want)
	}
	out, err = sample(t, "-checkpoint", ck, "-prompt", "a", "-n", "8", "-raw")
	if want := escapeCycle + "a\n"; err != nil || out != want {
		t.Errorf("-raw: %v %q, want %q", err, out, want)
	}
	for _, args := range [][]string{
		{"-prompt", "\x1b\u009b", "-n", "20"},
		{"-prompt", "\u202e", "-samples", "3", "-temperature", "5"},
		{"-samples", "3", "-data", text},
	} {
		out, err := sample(t, append([]string{"-checkpoint", ck}, args...)...)
		if err != nil || len(unsafeRunes(out)) > 0 || !strings.Contains(out, `\u`) {
			t.Errorf("%q: %v, unsafe %q in\n%s", args, err, unsafeRunes(out), out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-samples", "2", "-raw"}, "-raw writes a continuation of -prompt or -tokens as it is"},
		{[]string{"-eval", "-raw"}, "-raw writes a continuation of -prompt or -tokens as it is"},
		{[]string{"-prompt", "a\xff\x1b"}, "-prompt: byte 1 (0xff) is not valid UTF-8"},
	} {
		_, err := sample(t, append([]string{"-checkpoint", ck}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line containing %q", c.args, err, c.want)
		}
	}
}

// TestNonFiniteForwardIsRefused: a checkpoint whose forward pass overflows
// (finite but huge weights) stops every mode at its first step with
// inspect's words, instead of writing token 0 at every position (-eval
// says which of its two evaluations it was in).
func TestNonFiniteForwardIsRefused(t *testing.T) {
	ck := saveCheckpoint(t, copyTask, model.Config{DModel: 16, Heads: 2, Layers: 1}, func(m *model.Model) {
		qkv := weights(m, "blocks.0.attn.qkv.weight")
		for i := range qkv {
			qkv[i] = 3e38
		}
	})
	nonFinite := "non-finite activations: the logits at position 0 are NaN; " +
		"the forward pass overflows float32 (largest |weight| 3e+38, in blocks.0.attn.qkv.weight)"
	for _, c := range []struct {
		args  []string
		where string
	}{
		{[]string{"-tokens", "1 2"}, ""},
		{[]string{"-tokens", "1 2", "-no-cache"}, ""},
		{[]string{"-samples", "2"}, ""},
		{[]string{"-eval"}, "autoregressive evaluation: "},
	} {
		want := "checkpoint " + ck + ": " + c.where + nonFinite
		if _, err := sample(t, append([]string{"-checkpoint", ck}, c.args...)...); err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", c.args, err, want)
		}
	}
}

// refusal is the line of a length or -samples beyond the memory bound.
var refusal = regexp.MustCompile(`^(-n|-samples) (\d+): (\d+) rows? of (\d+) positions needs? an estimated \d+\.\d [KMGTPEZY]iB for ` +
	`(the KV cache|the recomputed forward pass \(-no-cache\)) \(limit 8\.0 GiB\); use (-n|-samples) (\d+) or less$`)

// TestLengthIsBounded: on a model without a learned position table, a -n
// or -samples whose cache would pass model.MaxMemory is one line naming the
// flag, the rows and positions (never a wrapped, negative count), the
// estimate and the largest value that fits, before anything is built
// (the refusal allocates next to nothing).
func TestLengthIsBounded(t *testing.T) {
	ck := saveCheckpoint(t, copyTask, model.Config{DModel: 16, Heads: 2, Layers: 1, Position: model.PositionALiBi}, func(*model.Model) {})
	ck0, err := checkpoint.Load(ck)
	if err != nil {
		t.Fatal(err)
	}
	m := ck0.Model
	for _, c := range []struct {
		args      []string
		flag      string
		positions string
	}{
		{[]string{"-n", "1000000000"}, "-n", "1000000001"},
		{[]string{"-n", "9223372036854775807"}, "-n", "9223372036854775808"},
		{[]string{"-n", "1000000", "-samples", "1024"}, "-samples", "1000001"},
		{[]string{"-n", "200000", "-no-cache"}, "-n", "200001"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := sample(t, append([]string{"-checkpoint", ck, "-tokens", "3"}, c.args...)...)
		runtime.ReadMemStats(&after)
		if used := after.TotalAlloc - before.TotalAlloc; used > 64<<20 {
			t.Errorf("%q: refusing allocated %d bytes", c.args, used)
		}
		line := fmt.Sprint(err)
		f := refusal.FindStringSubmatch(line)
		if f == nil || f[1] != c.flag || f[6] != c.flag || f[4] != c.positions {
			t.Errorf("%q: %s\nwant a line naming %s and %s positions", c.args, line, c.flag, c.positions)
			continue
		}
		bound := memoryBound{m, f[5] == "the KV cache"}
		rows, _ := strconv.Atoi(f[3])
		positions, _ := strconv.ParseUint(f[4], 10, 64)
		most, _ := strconv.Atoi(f[7])
		fitsUpTo := func(k int) bool { return bound.fits(rows, 1+uint64(k)) }
		if c.flag == "-samples" {
			fitsUpTo = func(k int) bool { return bound.fits(k, positions) }
		}
		if !fitsUpTo(most) || fitsUpTo(most+1) {
			t.Errorf("%q: %s: %d is not the largest %s that fits", c.args, line, most, c.flag)
		}
	}
}

// TestBoundNamesWhatToLower: on a model too large for a test to hold (its
// weights alone 4 GiB; only its config is read), each way of being over the
// bound names the flag that helps.
func TestBoundNamesWhatToLower(t *testing.T) {
	big := &model.Model{Dtype: tensor.Float32, Config: model.Config{Vocab: 10, Context: 8, DModel: 1024, Heads: 8, Layers: 256, Position: model.PositionALiBi}}
	bound := memoryBound{big, true}
	for _, c := range []struct {
		rows, prompt, n int
		want            string
	}{
		{1, 1, 100, ""},
		{1, 1, 5000, "-n 5000: 1 row of 5001 positions needs an estimated 23.5 GiB for the KV cache (limit 8.0 GiB); use -n "},
		{1024, 1, 9, "-samples 1024: 1024 rows of 10 positions need an estimated 56.0 GiB for the KV cache (limit 8.0 GiB); use -samples "},
		{1024, 1, 5000, "-samples 1024: 1024 rows of 5001 positions need"},
		{1024, 1, 5000, "; use fewer -samples and a smaller -n"},
		{1, 3000, 1, "the prompt of 3000 tokens: 1 row of 3001 positions needs"},
	} {
		err := bound.checkContinuation(c.rows, c.prompt, c.n)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%d rows, prompt %d, -n %d: %v, want %q", c.rows, c.prompt, c.n, err, c.want)
		}
	}
	if got := largest(math.MaxInt, func(k int) bool { return k <= 12345 }); got != 12345 {
		t.Errorf("largest: %d, want 12345", got)
	}
}

// countingStepper counts the steps of the stepper it wraps.
type countingStepper struct {
	generate.Stepper
	steps int
}

func (c *countingStepper) Step(tokens []int) ([]float64, error) {
	c.steps++
	return c.Stepper.Step(tokens)
}

// stepWriter records what is written and how many steps had run by then.
type stepWriter struct {
	st     *countingStepper
	steps  []int
	pieces []string
}

func (w *stepWriter) Write(p []byte) (int, error) {
	w.steps, w.pieces = append(w.steps, w.st.steps), append(w.pieces, string(p))
	return len(p), nil
}

// TestContinuationsStream: the prompt is written before the first step and
// each token of the first row right after the step that picks it (the k-th
// of a prompt of 3 after step 2+k), long before the last step; the other
// rows once they end. The text is what it was before streaming.
func TestContinuationsStream(t *testing.T) {
	op := opentest.Induction(t)
	m, task := op.Model, op.Task
	prompt, n := []int{3, 1, 4}, 6
	for _, rows := range []int{1, 3} {
		st, err := generate.New(m, rows, len(prompt)+n-1, true)
		if err != nil {
			t.Fatal(err)
		}
		w := &stepWriter{st: &countingStepper{Stepper: st}}
		s, _ := generate.NewSampler(generate.Options{Temperature: 1.5, TopP: 1, Seed: 2})
		if err := stream(w, w.st, printer{task: task}, prompt, contextPlan{feed: prompt, n: n}, rows, s, m.Config.Vocab); err != nil {
			t.Fatal(err)
		}
		st.Close()
		last := len(prompt) + n - 1
		want := []int{0} // the prompt
		for k := 1; k <= n; k++ {
			want = append(want, len(prompt)+k-1)
		}
		for range rows - 1 {
			want = append(want, last)
		}
		if fmt.Sprint(w.steps) != fmt.Sprint(want) {
			t.Errorf("%d rows: writes after steps %v, want %v (%q)", rows, w.steps, want, w.pieces)
		}
		text := strings.Join(w.pieces, "")
		line := regexp.MustCompile(`^3 1 4 \|( \d+){6}\n$`)
		if rows > 1 {
			line = regexp.MustCompile(`^(--- sample \d\n3 1 4 \|( \d+){6}\n){3}$`)
		}
		if !line.MatchString(text) {
			t.Errorf("%d rows: %q", rows, text)
		}
	}
}

// TestTrainingOnlyValuesDoNotMatter: sample opens a checkpoint whose train
// section training would refuse (a zero batch, a negative eval_size), as
// inspect does: it reads only what the model needs.
func TestTrainingOnlyValuesDoNotMatter(t *testing.T) {
	m, err := model.New(model.Config{Vocab: 9, Context: 8, DModel: 16, Heads: 2, Layers: 1, Attention: "fused"}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := rundir.DefaultConfig()
	run.Task, run.Model = copyTask, m.Config
	run.Train.BatchSize, run.Train.EvalSize = 0, -5
	path := filepath.Join(t.TempDir(), "odd.safetensors")
	if err := checkpoint.Save(path, m, run, 0); err != nil {
		t.Fatal(err)
	}
	if out, err := sample(t, "-checkpoint", path, "-prompt", "1 2 3 4 SEP", "-n", "3"); err != nil || !strings.HasPrefix(out, "1 2 3 4 SEP | ") {
		t.Errorf("a checkpoint with training-only values out of range: %v %q", err, out)
	}
}

// TestSeparatorNote: a prompt of a task whose examples hold SEP (copy)
// that lacks it gets one note on stderr saying what the task's prompts
// look like, spelled as the user gave it, SEP added; a prompt with SEP, or
// of a task without one (induction), gets none. Every continuation ends its
// line.
func TestSeparatorNote(t *testing.T) {
	ck := saveCheckpoint(t, copyTask, model.Config{DModel: 16, Heads: 2, Layers: 1}, func(*model.Model) {})
	for _, c := range []struct {
		args []string
		want string // the note, "" for none
	}{
		{[]string{"-checkpoint", ck, "-prompt", "1 2 3"}, `note: task copy's examples are symbols, SEP, then the answer; this prompt has no SEP, so what follows is no answer: try -prompt "1 2 3 SEP"` + "\n"},
		{[]string{"-checkpoint", ck, "-tokens", "1,2 "}, `try -tokens "1,2 SEP"`},
		{[]string{"-checkpoint", ck, "-prompt", "1 2 sep"}, ""},
		{[]string{"-checkpoint", induction, "-tokens", "3 1 4"}, ""},
	} {
		out, notes, err := sampleNoted(t, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == "" && notes != "" || !strings.Contains(notes, c.want) || strings.Count(notes, "\n") > 1 {
			t.Errorf("sample %q: stderr %q, want %q", c.args, notes, c.want)
		}
		if !strings.HasSuffix(out, "\n") {
			t.Errorf("sample %q: the output %q does not end its line", c.args, out)
		}
	}
}
