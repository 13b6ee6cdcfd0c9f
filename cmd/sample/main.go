package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/rundir"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "sample: %v\n", err)
		os.Exit(1)
	}
}

const usage = `usage: sample -checkpoint FILE [-prompt TEXT | -tokens IDS] [-n N] [-temperature T]
              [-top-k K] [-top-p P] [-seed S] [-samples M] [-no-cache] [-path fused|gorgonia]
       sample -checkpoint FILE -eval [-no-cache]

Lets a trained model write, one token at a time with a KV cache. Without a
prompt it writes the answers of held-out examples of its task and marks each
token; with -prompt or -tokens it continues them. -eval writes the answer of
every held-out example and prints how many it wrote exactly on its own.

flags:
`

// options are the parsed flags.
type options struct {
	checkpoint, prompt, tokens, path, data string
	n, samples                             int
	eval, noCache                          bool
	pick                                   generate.Options
}

// maxSamples bounds -samples: one batch row each.
const maxSamples = 1024

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.checkpoint, "checkpoint", "", "the model: a run directory or a checkpoint file written by train (required)")
	fs.StringVar(&o.data, "data", "", "the text file a text model was trained on, for held-out windows (a lone checkpoint reads no file otherwise; a run directory reads the one its run recorded)")
	fs.StringVar(&o.prompt, "prompt", "", `text to continue: characters for the text task, token labels ("3 1 4 SEP") for the others`)
	fs.StringVar(&o.tokens, "tokens", "", `token ids to continue, e.g. "3 1 4 16"`)
	fs.IntVar(&o.n, "n", 0, "tokens to write after a prompt (default: to the end of a learned position table, else the trained length)")
	fs.Float64Var(&o.pick.Temperature, "temperature", 0, "divide the logits by this before drawing; 0 is greedy")
	fs.IntVar(&o.pick.TopK, "top-k", 0, "draw only from the k most likely tokens; 0 is all, 1 is greedy")
	fs.Float64Var(&o.pick.TopP, "top-p", 1, "draw only from the smallest set of tokens whose probability reaches p, in (0, 1]")
	fs.Uint64Var(&o.pick.Seed, "seed", 1, "seed of the draws (the held-out examples come from the run's own seed)")
	fs.IntVar(&o.samples, "samples", 4, "held-out examples to show, or continuations of a prompt to write (default 1 with a prompt)")
	fs.BoolVar(&o.eval, "eval", false, "write the answer of every held-out example and print the exact match")
	fs.BoolVar(&o.noCache, "no-cache", false, "recompute the whole prefix at every step instead of using the KV cache")
	fs.StringVar(&o.path, "path", "", "run on this attention path, fused or gorgonia (default: the checkpoint's)")
	if helped, err := cli.Parse(fs, args, usage, stderr); helped || err != nil {
		return err
	}
	if err := check(fs, o); err != nil {
		return err
	}
	samplesSet := false
	fs.Visit(func(f *flag.Flag) { samplesSet = samplesSet || f.Name == "samples" })
	if !samplesSet && (o.prompt != "" || o.tokens != "") {
		o.samples = 1 // one continuation of a prompt unless -samples asks for more
	}
	op, err := open.Open(o.checkpoint, open.Options{Data: o.data, Notices: stderr})
	if err != nil {
		return err
	}
	m, task, cfg := op.Model, op.Task, op.Config
	if err := cli.ApplyPath(m, o.path); err != nil {
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
		return evaluate(stdout, m, task, cfg, !o.noCache)
	case o.prompt != "" || o.tokens != "":
		return continuePrompt(stdout, m, task, o, sampler)
	}
	return examples(stdout, m, task, cfg, o, sampler)
}

// check refuses flags that are out of range or cannot be used together.
func check(fs *flag.FlagSet, o options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case o.checkpoint == "":
		return errors.New("-checkpoint is required: a checkpoint written by train, e.g. -checkpoint runs/sort/checkpoint.safetensors")
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
	case set["n"] && !set["prompt"] && !set["tokens"]:
		return errors.New("-n is the length written after a prompt; held-out examples are written to their answer's end (add -prompt or -tokens)")
	}
	return o.pick.Validate()
}

// evaluate writes every held-out answer and prints the exact match beside
// the teacher-forced figures.
func evaluate(w io.Writer, m *model.Model, task data.Task, cfg rundir.Config, cached bool) error {
	size := max(cfg.Train.EvalSize, 1)
	set := data.EvalSet(task, size, cfg.Seed)
	start := time.Now()
	res, err := generate.Evaluate(m, set, model.EvalBatch(size), cached)
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

// continuePrompt writes -n tokens after the prompt, -samples times.
func continuePrompt(w io.Writer, m *model.Model, task data.Task, o options, s *generate.Sampler) error {
	prompt, err := promptIDs(task, o)
	if err != nil {
		return err
	}
	n, limit := o.n, m.Config.MaxLength()
	if limit > 0 && len(prompt) > limit {
		return errors.Errorf("the prompt has %d tokens, longer than the model's context of %d (its learned position table)", len(prompt), limit)
	}
	if n == 0 {
		n = m.Config.Context
		if limit > 0 {
			n = limit - len(prompt) + 1
		}
	}
	if limit > 0 && len(prompt)+n-1 > limit {
		return errors.Errorf("-n %d: a prompt of %d tokens leaves room for %d more in the model's context of %d (its learned position table)", n, len(prompt), limit-len(prompt)+1, limit)
	}
	prompts, ns := make([][]int, o.samples), make([]int, o.samples)
	for i := range prompts {
		prompts[i], ns[i] = prompt, n
	}
	st, err := generate.New(m, o.samples, len(prompt)+n-1, !o.noCache)
	if err != nil {
		return err
	}
	defer st.Close()
	written, err := generate.Generate(st, prompts, ns, s, m.Config.Vocab)
	if err != nil {
		return err
	}
	for i, out := range written {
		if o.samples > 1 {
			fmt.Fprintf(w, "--- sample %d\n", i+1)
		}
		if data.IsText(task) {
			fmt.Fprintf(w, "%s%s\n", decode(task, prompt, false), decode(task, out, false))
			continue
		}
		fmt.Fprintf(w, "%s | %s\n", decode(task, prompt, true), decode(task, out, true))
	}
	return nil
}

// promptIDs reads -prompt (characters for text, labels otherwise) or
// -tokens and checks each id against the vocabulary.
func promptIDs(task data.Task, o options) ([]int, error) {
	var ids []int
	switch {
	case o.tokens != "":
		var err error
		if ids, err = cli.ParseTokens(o.tokens, cli.TokenNames(task)); err != nil {
			return nil, err
		}
	case data.IsText(task):
		var err error
		if ids, _, err = data.Encode(task, o.prompt); err != nil {
			return nil, errors.Wrap(err, "-prompt")
		}
	default:
		names := map[string]int{}
		for id := range task.Vocab() {
			names[strings.ToUpper(task.Label(id))] = id
		}
		for i, f := range strings.Fields(o.prompt) {
			id, ok := names[strings.ToUpper(f)]
			if !ok {
				return nil, errors.Errorf("-prompt: %s (token %d) is not a token of task %s (its tokens print as %s ... %s)",
					strconv.Quote(f), i, task.Name(), task.Label(0), task.Label(task.Vocab()-1))
			}
			ids = append(ids, id)
		}
	}
	for i, id := range ids {
		if id < 0 || id >= task.Vocab() {
			return nil, errors.Errorf("-tokens: token %d at position %d is outside the vocabulary [0, %d)", id, i, task.Vocab())
		}
	}
	return ids, nil
}

// decode prints ids as the task prints them: text as itself (or its
// labels, spaced, when labels is set), other tasks as space-separated labels.
func decode(task data.Task, ids []int, labels bool) string {
	var b strings.Builder
	for i, id := range ids {
		switch {
		case data.IsText(task) && !labels:
			b.WriteString(decodeChar(task, id))
		default:
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(task.Label(id))
		}
	}
	return b.String()
}

// decodeChar is the character of a text id, as the file holds it.
func decodeChar(task data.Task, id int) string {
	r, _ := data.Char(task, id)
	if !utf8.ValidRune(r) {
		return task.Label(id)
	}
	return string(r)
}

// examples writes the answers of the first -samples rows of the run's
// held-out set (for text: the second half of held-out windows) and marks
// every token.
func examples(w io.Writer, m *model.Model, task data.Task, cfg rundir.Config, o options, s *generate.Sampler) error {
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
	written, err := generate.Generate(st, prompts, ns, s, m.Config.Vocab)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %d held-out examples, %s, %s\n", task.Name(), set.Size, pickName(o.pick), cacheName(!o.noCache))
	exact := 0
	for i := range set.Size {
		_, targets, _ := set.Row(i)
		want := targets[spans[i].First : spans[i].Last+1]
		show := showExample
		if data.IsText(task) {
			show = showText
		}
		if show(w, task, i, prompts[i], want, written[i]) {
			exact++
		}
	}
	fmt.Fprintf(w, "exact match %d/%d\n", exact, set.Size)
	return nil
}

// showExample prints one example as input, target and model rows, the
// columns aligned, with ^ under each wrong token; it reports whether every
// token is right.
func showExample(w io.Writer, task data.Task, i int, prompt, want, got []int) bool {
	width := 1
	for _, ids := range [][]int{prompt, want, got} {
		for _, id := range ids {
			width = max(width, utf8.RuneCountInString(task.Label(id)))
		}
	}
	row := func(ids []int) string {
		cells := make([]string, len(ids))
		for k, id := range ids {
			l := task.Label(id)
			cells[k] = l + strings.Repeat(" ", width-utf8.RuneCountInString(l))
		}
		return strings.TrimRight(strings.Join(cells, " "), " ")
	}
	marks, right := make([]string, len(got)), 0
	for k := range got {
		marks[k] = strings.Repeat(" ", width)
		if got[k] == want[k] {
			right++
		} else {
			marks[k] = "^" + strings.Repeat(" ", width-1)
		}
	}
	verdict := "exact"
	if right < len(got) {
		verdict = fmt.Sprintf("%d/%d right", right, len(got))
	}
	fmt.Fprintf(w, "#%-3d input   %s\n", i+1, row(prompt))
	fmt.Fprintf(w, "     target  %s\n", row(want))
	fmt.Fprintf(w, "     model   %s   %s\n", row(got), verdict)
	if right < len(got) {
		fmt.Fprintf(w, "             %s\n", strings.TrimRight(strings.Join(marks, " "), " "))
	}
	return right == len(got)
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

// showText prints one text example as quoted strings, the prompt's last
// line then what follows in the file and what the model wrote.
func showText(w io.Writer, task data.Task, i int, prompt, want, got []int) bool {
	right := 0
	for k := range got {
		right += b2i(got[k] == want[k])
	}
	fmt.Fprintf(w, "#%-3d prompt  %q\n", i+1, decode(task, prompt, false))
	fmt.Fprintf(w, "     file    %q\n", decode(task, want, false))
	fmt.Fprintf(w, "     model   %q   %d/%d characters right\n", decode(task, got, false), right, len(got))
	return right == len(got)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
