package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/rundir"
)

func main() { cli.Main("sample", run) }

const usage = `usage: sample MODEL [-prompt TEXT | -tokens IDS] [-n N] [-temperature T]
              [-top-k K] [-top-p P] [-seed S] [-samples M] [-crop] [-no-cache] [-raw] [-path fused|gorgonia]
       sample MODEL -eval [-no-cache]

Lets a trained model write, one token at a time with a KV cache, printing
each as it is written. MODEL (or -checkpoint MODEL) is a run directory or a
checkpoint written by train, a Hugging Face directory or a nanoGPT ckpt.pt. A model trained elsewhere (a Hugging Face directory or
a nanoGPT ckpt.pt) continues -prompt in its tokenizer, or starts from its
beginning-of-text token (or a newline, as nanoGPT), and stops at any of its end-of-text tokens or after -n tokens.
Past a learned context each token is predicted from the last ones that fit,
as nanoGPT crops; -crop does the same for other positions. Without a prompt it writes the answers of held-out
examples of its task and marks each token; with -prompt or -tokens it
continues them. -eval writes the answer of every held-out example and prints
how many it wrote exactly on its own. Model text is printed with control
characters escaped (\x1b), unless -raw.

flags:
`

// options are the parsed flags.
type options struct {
	checkpoint, prompt, tokens, path, data, vocab string
	// promptFlag is the flag that gave the prompt as the user typed it
	// (-prompt, or its alias -text; -tokens), for the errors it causes.
	promptFlag         string
	n, samples         int
	eval, noCache, raw bool
	crop               bool
	pick               generate.Options
}

// pretrainedN is -n's default for a model trained elsewhere.
const pretrainedN = 64

// maxSamples bounds -samples: one batch row each.
const maxSamples = 1024

// heldOutSamples is -samples' default without a prompt: the held-out
// examples a lab model shows. A prompt, or a model trained elsewhere, is
// continued once by default.
const heldOutSamples = 4

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.checkpoint, "checkpoint", "", "the model: a run directory or a checkpoint file written by train, a Hugging Face directory (config.json) of GPT-2, Llama, Mistral or Qwen 2, or a nanoGPT ckpt.pt; or give it as the first argument")
	fs.StringVar(&o.data, "data", "", "the text file a text model was trained on, for held-out windows (a lone checkpoint reads no file otherwise; a run directory reads the one its run recorded)")
	fs.StringVar(&o.prompt, "prompt", "", `text to continue: characters for the text task, text in the tokenizer of a model trained elsewhere, token labels ("3 1 4 SEP") for the others`)
	fs.StringVar(&o.prompt, "text", "", "the same as -prompt")
	fs.StringVar(&o.vocab, "vocab", "", "a nanoGPT character model's meta.pkl (default: the one beside its ckpt.pt)")
	fs.StringVar(&o.tokens, "tokens", "", `token ids to continue, e.g. "3 1 4 16"`)
	fs.IntVar(&o.n, "n", 0, fmt.Sprintf("tokens to write after a prompt (default: to the end of a learned position table, else the trained length; %d for a model trained elsewhere, which also stops at any of its end-of-text tokens)", pretrainedN))
	fs.Float64Var(&o.pick.Temperature, "temperature", 0, "divide the logits by this before drawing; 0 is greedy")
	fs.IntVar(&o.pick.TopK, "top-k", 0, "draw only from the k most likely tokens; 0 is all, 1 is greedy")
	fs.Float64Var(&o.pick.TopP, "top-p", 1, "draw only from the smallest set of tokens whose probability reaches p, in (0, 1]")
	fs.Uint64Var(&o.pick.Seed, "seed", 1, "seed of the draws (the held-out examples come from the run's own seed)")
	fs.IntVar(&o.samples, "samples", 0, fmt.Sprintf("how many to write: held-out examples (default %d), or continuations of a prompt or of a model trained elsewhere (default 1)", heldOutSamples))
	fs.BoolVar(&o.eval, "eval", false, "write the answer of every held-out example and print the exact match")
	fs.BoolVar(&o.crop, "crop", false, "write past the context of a model without a learned position table (rotary, ALiBi, sinusoidal, none) by cropping to its last tokens, as a learned one always does")
	fs.BoolVar(&o.noCache, "no-cache", false, "recompute the whole prefix at every step instead of using the KV cache")
	fs.StringVar(&o.path, "path", "", "run on this attention path, fused or gorgonia (default: the checkpoint's)")
	fs.BoolVar(&o.raw, "raw", false, "write a text model's continuation byte for byte, unescaped, for a pipe or a file; a terminal may act on control characters the model writes (text models with -prompt or -tokens only)")
	model, helped, err := cli.ParseArgs(fs, args, usage, stdout, cli.Operand{Name: "model"})
	if helped || err != nil {
		return err
	}
	if o.checkpoint, err = cli.FlagOrArg("checkpoint", o.checkpoint, model); err != nil {
		return err
	}
	samplesSet := false
	o.promptFlag = "-prompt"
	fs.Visit(func(f *flag.Flag) {
		samplesSet = samplesSet || f.Name == "samples"
		if f.Name == "text" || f.Name == "tokens" {
			o.promptFlag = "-" + f.Name
		}
	})
	if !samplesSet {
		o.samples = heldOutSamples
		if o.prompt != "" || o.tokens != "" {
			o.samples = 1 // one continuation of a prompt unless -samples asks for more
		}
	}
	if err := check(fs, o); err != nil {
		return err
	}
	op, err := open.Open(o.checkpoint, open.Options{Data: o.data, Notices: stderr, Vocab: o.vocab, Map: true})
	if err != nil {
		return err
	}
	if err := op.UsePath(o.path); err != nil {
		return err
	}
	if op.TrainedElsewhere() {
		return writePretrained(stdout, stderr, op, o, samplesSet)
	}
	m, task, cfg := op.Model, op.Task, *op.Run // the lab's own model: its run's
	if err := checkHeldOut(fs, o); err != nil {
		return err
	}
	if !data.HasWindows(task) && (o.eval || o.prompt == "" && o.tokens == "") {
		return errors.Errorf("held-out examples are windows of the text %s was trained on: name that file with -data FILE, or give -prompt", o.checkpoint)
	}
	sampler, err := generate.NewSampler(o.pick)
	if err != nil {
		return err
	}
	switch {
	case o.eval:
		return errors.Wrapf(evaluate(stdout, m, task, cfg, !o.noCache), "checkpoint %s", o.checkpoint)
	case o.prompt != "" || o.tokens != "":
		return continuePrompt(stdout, stderr, op, o, sampler)
	}
	return examples(stdout, m, task, cfg, o, sampler)
}

// check refuses flags that are out of range or cannot be used together.
func check(fs *flag.FlagSet, o options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["prompt"] && set["text"] {
		return errors.New("-prompt and -text are the same flag; use one")
	}
	set["prompt"] = set["prompt"] || set["text"]
	switch {
	case o.checkpoint == "":
		return errors.New("no model: give one, e.g. sample runs/sort (or -checkpoint runs/sort)")
	case set["prompt"] && set["tokens"]:
		return errors.New("-prompt and -tokens both give the prompt; use one")
	case set["prompt"] && o.prompt == "", set["tokens"] && strings.TrimSpace(o.tokens) == "":
		return errors.New("the prompt is empty: give at least one token (leave -prompt and -tokens out for held-out examples)")
	case o.n < 0:
		return errors.Errorf("-n %d: must be 0 (the default length) or positive", o.n)
	case o.samples < 1 || o.samples > maxSamples:
		return errors.Errorf("-samples %d: must be in [1, %d]", o.samples, maxSamples)
	case o.eval && (set["prompt"] || set["tokens"] || set["n"] || set["samples"]):
		return errors.New("-eval writes the whole held-out set greedily; it takes no -prompt, -tokens, -n or -samples")
	case o.eval && (set["temperature"] || set["top-k"] || set["top-p"]):
		return errors.New("-eval writes greedily, as exact match needs; it takes no -temperature, -top-k or -top-p")
	}
	if err := cli.CheckText(o.promptFlag, o.prompt); err != nil {
		return err
	}
	return o.pick.Validate()
}

// checkHeldOut refuses what only a continuation of a prompt takes, for a
// lab model without one (which writes held-out examples; a model trained
// elsewhere writes from its beginning of text instead).
func checkHeldOut(fs *flag.FlagSet, o options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	prompt := set["prompt"] || set["text"] || set["tokens"]
	switch {
	case set["n"] && !prompt:
		return errors.New("-n is the length written after a prompt; held-out examples are written to their answer's end (add -prompt or -tokens)")
	case o.raw && !prompt:
		return errors.New("-raw writes a continuation of -prompt or -tokens as it is; held-out examples and -eval print quoted text and figures")
	case o.crop && !prompt:
		return errors.New("-crop lets a continuation of -prompt or -tokens pass the model's context; held-out examples are written within it")
	}
	return nil
}

// evaluate writes every held-out answer and prints the exact match beside
// the teacher-forced figures.
func evaluate(w io.Writer, m *model.Model, task data.Task, cfg rundir.Config, cached bool) error {
	size := max(cfg.Train.EvalSize, 1)
	set := data.EvalSet(task, size, cfg.Seed)
	start := time.Now()
	res, err := generate.Evaluate(m, set, model.EvalBatch(size, task.SeqLen()), cached)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(w, "held-out set: %d sequences of %s, seed %d\n", set.Size, task.Name(), cfg.Seed)
	fmt.Fprintf(w, "teacher-forced   token_acc %.4f  seq_acc %.4f  (%d/%d)\n",
		ratio(res.TeacherTokensRight, res.Tokens), ratio(res.TeacherExact, res.Rows), res.TeacherExact, res.Rows)
	fmt.Fprintf(w, "written alone    token_acc %.4f  exact   %.4f  (%d/%d)\n",
		ratio(res.TokensRight, res.Tokens), ratio(res.Exact, res.Rows), res.Exact, res.Rows)
	mode := "KV cache"
	if !cached {
		mode = "no cache"
	}
	fmt.Fprintf(w, "(%s, %.2f s)\n", mode, elapsed.Seconds())
	return nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// continuePrompt writes -n tokens after the prompt, -samples times,
// printing each token as it is picked; a prompt unlike the task's gets a
// note on notices first.
func continuePrompt(w, notices io.Writer, op *open.Opened, o options, s *generate.Sampler) error {
	m, task := op.Model, op.Task
	if o.raw && op.Tokenizer == nil {
		return errors.Errorf("-raw writes a text model's characters as they are; task %s prints labels (digits and SEP), which have nothing to escape", task.Name())
	}
	prompt, err := promptIDs(op, o)
	if err != nil {
		return err
	}
	if note := separatorNote(task, prompt, o); note != "" {
		fmt.Fprintln(notices, note)
	}
	plan, err := planContinuation(m.Config, false, o.crop, prompt, o.n)
	if err != nil {
		return err
	}
	if err := (memoryBound{m, !o.noCache}).checkPlan(o.samples, plan); err != nil {
		return err
	}
	st, err := newStepper(m, o.samples, len(prompt), plan, !o.noCache, notices)
	if err != nil {
		return err
	}
	defer st.Close()
	err = stream(w, st, printer{task, o.raw}, prompt, plan, o.samples, s, m.Config.Vocab)
	return errors.Wrapf(err, "checkpoint %s", o.checkpoint)
}

// separatorNote is the note for a prompt without the separator of a task
// whose examples have one (copy, reverse, sort: symbols, SEP, the answer),
// which the model would continue from a place it never saw; "" otherwise.
func separatorNote(task data.Task, prompt []int, o options) string {
	sep, ok := data.Separator(task)
	if !ok || slices.Contains(prompt, sep) {
		return ""
	}
	flag, given := o.promptFlag, o.prompt
	if o.tokens != "" {
		given = o.tokens
	}
	name := task.Label(sep)
	return fmt.Sprintf("note: task %s's examples are symbols, %s, then the answer; this prompt has no %s, so what follows is no answer: try %s %q",
		task.Name(), name, name, flag, strings.TrimSpace(given)+" "+name)
}

// promptIDs reads -prompt (characters for text, labels otherwise) or
// -tokens and checks each id against the vocabulary.
func promptIDs(op *open.Opened, o options) ([]int, error) {
	task := op.Task
	var ids []int
	switch {
	case o.tokens != "":
		var err error
		if ids, err = cli.ParseTokens(o.tokens, open.TokenNames(op)); err != nil {
			return nil, err
		}
	case data.IsText(task):
		var err error
		if ids, _, err = data.Encode(task, o.prompt); err != nil {
			return nil, errors.Wrap(err, o.promptFlag)
		}
	default:
		names := map[string]int{}
		for id := range task.Vocab() {
			names[strings.ToUpper(task.Label(id))] = id
		}
		for i, f := range strings.Fields(o.prompt) {
			id, ok := names[strings.ToUpper(f)]
			if !ok {
				return nil, errors.Errorf("%s: %s (token %d) is not a token of task %s (its tokens print as %s ... %s)",
					o.promptFlag, strconv.Quote(f), i, task.Name(), task.Label(0), task.Label(task.Vocab()-1))
			}
			ids = append(ids, id)
		}
	}
	for i, id := range ids {
		if id < 0 || id >= task.Vocab() {
			return nil, errors.Errorf("%s: token %d at position %d is outside the vocabulary [0, %d)", o.promptFlag, id, i, task.Vocab())
		}
	}
	return ids, nil
}

// examples writes the answers of the first -samples rows of the run's
// held-out set (for text: the second half of held-out windows) and marks
// every token.
func examples(w io.Writer, m *model.Model, task data.Task, cfg rundir.Config, o options, s *generate.Sampler) error {
	if err := (memoryBound{m, !o.noCache}).checkExamples(o.samples, task.SeqLen()); err != nil {
		return err
	}
	set := data.EvalSet(task, o.samples, cfg.Seed)
	prompts, ns, spans := make([][]int, set.Size), make([]int, set.Size), make([]generate.Span, set.Size)
	for i := range set.Size {
		tokens, _, mask := set.Row(i)
		span, ok := generate.AnswerSpan(mask)
		if data.IsText(task) || !ok {
			span = generate.Span{First: set.SeqLen/2 - 1, Last: set.SeqLen - 1} // continue the window's first half
		}
		prompts[i], ns[i], spans[i] = tokens[:span.First+1], span.Last-span.First+1, span
	}
	st, err := generate.New(m, set.Size, set.SeqLen, !o.noCache)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(w, "%s: %d held-out examples, %s, %s\n", task.Name(), set.Size, pickName(o.pick), cacheName(!o.noCache))
	show := showExample
	if data.IsText(task) {
		show = showText
	}
	rows := &exampleRows{w: w, n: ns, written: make([][]int, set.Size), show: func(i int, written []int) bool {
		_, targets, _ := set.Row(i)
		return show(w, printer{task: task}, i, prompts[i], targets[spans[i].First:spans[i].Last+1], written)
	}}
	if _, err := generate.Stream(st, prompts, ns, s, m.Config.Vocab, rows.emit); err != nil {
		return errors.Wrapf(err, "checkpoint %s", o.checkpoint)
	}
	fmt.Fprintf(w, "exact match %d/%d\n", rows.exact, set.Size)
	return nil
}

func pickName(o generate.Options) string {
	if o.Temperature == 0 || o.TopK == 1 {
		return "greedy"
	}
	s := fmt.Sprintf("temperature %v", o.Temperature)
	if o.TopK > 0 {
		s += fmt.Sprintf(", top-k %d", o.TopK)
	}
	if o.TopP < 1 {
		s += fmt.Sprintf(", top-p %v", o.TopP)
	}
	return s + fmt.Sprintf(", seed %d", o.Seed)
}

func cacheName(cached bool) string {
	if cached {
		return "KV cache"
	}
	return "no cache"
}
