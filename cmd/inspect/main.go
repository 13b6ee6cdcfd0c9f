package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/rundir"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/train"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "inspect: %v\n", err)
		os.Exit(1)
	}
}

// options are the parsed flags.
type options struct {
	checkpoint string
	tokens     string
	layer      int // -1: every layer
	head       int // -1: every head
	json       bool
	png        string
	color      string
	samples    int
	seed       uint64
	allRows    bool
}

// maxSamples bounds -samples: the scoring batch holds Layers x samples x H x
// T x T attention weights at once, and a slip of the finger should not ask
// for gigabytes.
const maxSamples = 4096

// Streams of the -seed generator: the displayed example and the scoring batch
// come from different PCG streams, so changing -samples never changes the
// sequence shown.
const (
	exampleStream uint64 = 1
	samplesStream uint64 = 2
)

// run is the whole command: flags in args, output on stdout, usage on stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	// The flag package would print a bad flag's error and the whole usage;
	// the returned error is the one line main prints, and -h prints the usage.
	fs.SetOutput(io.Discard)
	var o options
	fs.StringVar(&o.checkpoint, "checkpoint", "", "checkpoint file written by train (required)")
	fs.StringVar(&o.tokens, "tokens", "", `token ids to show, e.g. "3 1 4 1 16 3 1 4" (default: one example of the checkpoint's task drawn with -seed)`)
	fs.IntVar(&o.layer, "layer", -1, "show only this layer; -1 shows all")
	fs.IntVar(&o.head, "head", -1, "show only this head; -1 shows all")
	fs.BoolVar(&o.json, "json", false, "print one JSON object (tokens, attention, logits, predictions, heads) instead of heatmaps")
	fs.StringVar(&o.png, "png", "", "also write a layers x heads grid of heatmaps to this PNG file")
	fs.StringVar(&o.color, "color", "auto", "heatmap colours: auto, always or never")
	fs.IntVar(&o.samples, "samples", 64, "task examples the head roles are averaged over")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the displayed example and of the scoring examples")
	fs.BoolVar(&o.allRows, "all-rows", false, "score head roles over every query position, not only those the task scores")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: inspect -checkpoint FILE [-tokens IDS] [-layer L] [-head H] [-json] [-png FILE] [-color auto|always|never] [-samples N] [-seed S] [-all-rows]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.Usage()
			return nil
		}
		return errors.Wrap(err, "bad flags (see -h)")
	}
	if fs.NArg() > 0 {
		return errors.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	if o.checkpoint == "" {
		return errors.New("-checkpoint is required")
	}
	mode, err := colorMode(o.color, stdout)
	if err != nil {
		return err
	}
	if o.png != "" {
		// Refused before the work; writePNG checks again when it writes.
		if err := rundir.CheckOutput(o.png, []string{o.checkpoint}); err != nil {
			return errors.Wrap(err, "-png")
		}
	}
	r, err := prepare(o)
	if err != nil {
		return err
	}
	if o.png != "" {
		if err := r.writePNG(o.png); err != nil {
			return err
		}
	}
	if o.json {
		return r.writeJSON(stdout)
	}
	if err := r.writeText(stdout, mode, width(stdout)); err != nil {
		return err
	}
	if o.png != "" {
		_, err := fmt.Fprintf(stdout, "wrote %s\n", o.png)
		return errors.Wrap(err, "writing output")
	}
	return nil
}

// prepare checks the options against the checkpoint, then runs the model on
// the displayed sequence and scores every head. Every input is validated
// before a graph is built.
func prepare(o options) (report, error) {
	if o.samples < 1 || o.samples > maxSamples {
		return report{}, errors.Errorf("-samples %d: must be in [1, %d]", o.samples, maxSamples)
	}
	userTokens, err := parseTokens(o.tokens)
	if err != nil {
		return report{}, err
	}
	m, info, err := model.Load(o.checkpoint)
	if err != nil {
		return report{}, err
	}
	task, err := taskOf(info.RunConfig, m.Config)
	if err != nil {
		return report{}, errors.Wrapf(err, "checkpoint %s", o.checkpoint)
	}
	cfg := m.Config
	if err := checkMemory(cfg, o.samples); err != nil {
		return report{}, err
	}
	if err := checkIndex("-layer", o.layer, cfg.Layers, "layers"); err != nil {
		return report{}, err
	}
	if err := checkIndex("-head", o.head, cfg.Heads, "heads per layer"); err != nil {
		return report{}, err
	}
	ex, err := example(task, cfg, userTokens, o.seed)
	if err != nil {
		return report{}, err
	}
	fw, err := forward(m, ex)
	if err != nil {
		return report{}, err
	}
	roles, err := scoreHeads(m, task, o.samples, o.seed, o.allRows)
	if err != nil {
		return report{}, err
	}
	return report{opts: o, info: info, task: task, cfg: cfg, dtype: m.Dtype, ex: ex, fw: fw, roles: roles}, nil
}

// parseTokens reads whitespace- or comma-separated decimal ids; "" gives nil.
// Ranges are checked against the model later (example); the message quotes
// at most a few dozen bytes of a bad token, so it stays one readable line.
func parseTokens(s string) ([]int, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
	if len(fields) == 0 {
		if strings.TrimSpace(s) != "" {
			return nil, errors.Errorf("-tokens %s: no token ids", quoteShort(s))
		}
		return nil, nil
	}
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if errors.Is(err, strconv.ErrRange) && decimal.MatchString(f) {
			return nil, errors.Errorf("-tokens: %s (token %d) is too large to be a token id", quoteShort(f), i)
		}
		if err != nil {
			return nil, errors.Errorf("-tokens: %s (token %d) is not a number", quoteShort(f), i)
		}
		ids[i] = id
	}
	return ids, nil
}

// decimal matches what strconv.Atoi would read but for its range.
var decimal = regexp.MustCompile(`^[+-]?[0-9]+$`)

// quoteShort quotes s for a message, cut to 40 bytes.
func quoteShort(s string) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// taskOf rebuilds the checkpoint's task from its run config and checks that
// it fits the model.
func taskOf(runConfig []byte, cfg model.Config) (data.Task, error) {
	var run struct {
		Task *data.TaskConfig `json:"task"`
	}
	if err := json.Unmarshal(runConfig, &run); err != nil {
		return nil, errors.Wrap(err, "metadata config")
	}
	if run.Task == nil {
		return nil, errors.New(`metadata config has no "task" member`)
	}
	task, err := data.New(*run.Task)
	if err != nil {
		return nil, errors.Wrap(err, "metadata config")
	}
	if task.Vocab() != cfg.Vocab || task.SeqLen() > cfg.Context {
		return nil, errors.Errorf("task %s has vocabulary %d and sequence length %d, but the model has vocab %d and context %d",
			task.Name(), task.Vocab(), task.SeqLen(), cfg.Vocab, cfg.Context)
	}
	return task, nil
}

// checkMemory refuses a -samples whose scoring batch would not fit: the
// inference graph holds about 4 (samples, H, T, T) tensors per layer, and
// scoreHeads a float64 copy of the attention. train's estimate of a training
// step of that batch (forward and backward, so twice the graph) bounds both.
func checkMemory(cfg model.Config, samples int) error {
	est := train.Config{Model: cfg, Train: train.TrainConfig{BatchSize: samples}}.EstimateBytes()
	if est > train.MaxMemory {
		return errors.Errorf("-samples %d: scoring the heads of this model (%d layers of %d heads, context %d) needs an estimated %.1f GiB (limit %.1f GiB); use a smaller -samples",
			samples, cfg.Layers, cfg.Heads, cfg.Context, est/(1<<30), float64(train.MaxMemory)/(1<<30))
	}
	return nil
}

func checkIndex(flagName string, v, n int, what string) error {
	if v < -1 || v >= n {
		return errors.Errorf("%s %d does not exist: the model has %d %s (0..%d)", flagName, v, n, what, n-1)
	}
	return nil
}

// separator is the task's separator id ("SEP"), or heads.NoSeparator.
func separator(task data.Task) int {
	for id := range task.Vocab() {
		if task.Label(id) == "SEP" {
			return id
		}
	}
	return heads.NoSeparator
}

// sequence is the one sequence whose heatmaps are shown.
type sequence struct {
	tokens  []int
	targets []int     // next token; meaningless where scored is 0
	scored  []float64 // 1 where the prediction is scored (the task's mask), else 0
	drawn   bool      // drawn from the task rather than given with -tokens
}

// example returns the user's tokens (validated against the model) or one
// example of the task drawn from seed. For user tokens the target of
// position t is token t+1, scored where the task's mask scores position t;
// the last position has no target.
func example(task data.Task, cfg model.Config, user []int, seed uint64) (sequence, error) {
	t := task.SeqLen()
	s := sequence{tokens: make([]int, t), targets: make([]int, t), scored: make([]float64, t)}
	task.Sample(rand.New(rand.NewPCG(seed, exampleStream)), s.tokens, s.targets, s.scored)
	if user == nil {
		s.drawn = true
		return s, nil
	}
	if len(user) > cfg.Context {
		return sequence{}, errors.Errorf("-tokens: %d tokens is longer than the model's context of %d", len(user), cfg.Context)
	}
	for i, id := range user {
		if id < 0 || id >= cfg.Vocab {
			return sequence{}, errors.Errorf("-tokens: token %d at position %d is outside the vocabulary [0, %d)", id, i, cfg.Vocab)
		}
	}
	mask := s.scored
	s = sequence{tokens: user, targets: make([]int, len(user)), scored: make([]float64, len(user))}
	for i := 0; i+1 < len(user); i++ {
		s.targets[i] = user[i+1]
		if i < len(mask) {
			s.scored[i] = mask[i]
		}
	}
	return s, nil
}
