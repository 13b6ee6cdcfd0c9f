package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/open"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/rundir"
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
	data       string    // -data: the text file a text model's windows come from
	notices    io.Writer // where inspect names the files it reads (stderr)
	layer      int       // -1: every layer
	head       int       // -1: every head
	json       bool
	png        string
	html       string
	run        string   // the first -run
	runs       []string // every -run, in order
	color      string
	samples    int
	seed       uint64
	allRows    bool
	mean       bool
	path       string // attention path to run on; "" keeps the checkpoint's
	graph      bool   // print the expression graph's summary instead of the heads
	dot        string // write the expression graph as DOT to this file
	trainGraph bool   // -graph and -dot show the training graph
	ablate     bool   // also score the held-out set with each head removed
	ablation   string // how a removed head is replaced: zero or mean
	length     int    // show an example of this task length; 0: the trained one
	summary    bool   // print only the model and the heads' table
	allLogits  bool   // -json: every logit even for a wide vocabulary
	circuits   bool   // also the circuit metrics (prefix matching, copying, composition)
}

// maxSamples bounds -samples: the scoring batch holds Layers x samples x H x
// T x T attention weights at once, and a slip of the finger should not ask
// for gigabytes.
const maxSamples = 4096

// exampleStream is the PCG stream of the displayed example under -seed; the
// scoring examples come from analysis.SamplesStream, so changing -samples
// never changes the sequence shown.
const exampleStream uint64 = 1

const usage = `usage: inspect -checkpoint FILE [-tokens IDS] [-layer L] [-head H] [-json] [-png FILE]
               [-html FILE [-run DIR]] [-color auto|always|never] [-samples N] [-seed S]
               [-all-rows] [-mean] [-path fused|gorgonia] [-ablate [-ablation zero|mean]]
       inspect -checkpoint FILE -graph [-dot FILE] [-train] [-path fused|gorgonia]
       inspect -run DIR [-json] [-png FILE]

Shows what every attention head of a checkpoint written by train does:
heatmaps of its weights on one sequence, the model's predictions, and each
head's role (previous-token, offset k, induction, ...) scored over -samples
examples of the task. -json and -png write the same as data and as an image;
-html writes it all as one interactive page that opens offline. -ablate
also runs the run's held-out set once per head with that head removed and
lists the heads by how much the loss rises.
-graph prints the model's expression graph instead, one node a line; -dot
writes it for graphviz. -run DIR alone shows a training run: its loss and
accuracy curves, and each head's strongest role through training with the
step it formed (roles.jsonl).

flags:
`

// run is the whole command: flags in args, output on stdout, usage on stderr.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.checkpoint, "checkpoint", "", "the model: a run directory or a checkpoint file written by train (required)")
	fs.StringVar(&o.data, "data", "", "the text file a text model was trained on, for its windows (a lone checkpoint reads no file otherwise; a run directory reads the one its run recorded)")
	fs.StringVar(&o.tokens, "tokens", "", `token ids to show, e.g. "3 1 4 1 16 3 1 4" (default: one example of the checkpoint's task drawn with -seed)`)
	fs.IntVar(&o.layer, "layer", -1, "show only this layer; -1 shows all")
	fs.IntVar(&o.head, "head", -1, "show only this head; -1 shows all")
	fs.BoolVar(&o.json, "json", false, "print one JSON object (tokens, attention, logits, predictions, heads) instead of heatmaps")
	fs.StringVar(&o.png, "png", "", "also write a layers x heads grid of heatmaps to this PNG file")
	fs.StringVar(&o.html, "html", "", "also write a self-contained interactive HTML report to this file")
	fs.Func("run", "alone: show this run directory's curves and head roles through training (repeat -run to draw several runs together); with -html: the run whose metrics.jsonl the page plots (default: the checkpoint's directory, if it has one)", func(dir string) error {
		o.runs = append(o.runs, dir)
		o.run = o.runs[0]
		return nil
	})
	fs.StringVar(&o.color, "color", "auto", "heatmap colours: auto, always or never")
	fs.IntVar(&o.samples, "samples", 64, fmt.Sprintf("task examples the head roles are averaged over; -html also embeds the first %d or fewer held-out examples", maxPageExamples))
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the displayed example and of the scoring examples")
	fs.BoolVar(&o.allLogits, "all-logits", false, fmt.Sprintf("with -json: every logit, even when a sequence has more than %d (by default only each position's top %d then)", maxLogitValues, logitsTopK))
	fs.BoolVar(&o.circuits, "circuits", false, "also the induction papers' circuit metrics: each head's prefix-matching and copying scores, and the Q/K/V composition of heads in consecutive layers")
	fs.BoolVar(&o.summary, "summary", false, "print only the model and one line per head (layer, head, role, score, entropy)")
	fs.IntVar(&o.length, "length", 0, "show one example of this task length (task.length) instead of the trained one: length generalisation (not beyond a learned position table)")
	fs.BoolVar(&o.allRows, "all-rows", false, "score head roles over every query position, not only those the task scores")
	fs.BoolVar(&o.mean, "mean", false, "draw each head's weights averaged over the -samples examples (axes are positions) instead of on the one sequence")
	fs.BoolVar(&o.ablate, "ablate", false, "also run the run's held-out set once per head with that head removed and print the heads by importance")
	fs.StringVar(&o.ablation, "ablation", "zero", "with -ablate: replace a removed head's output by zero or by its mean over the set (mean)")
	fs.StringVar(&o.path, "path", "", "run on this attention path, fused or gorgonia (default: the checkpoint's model.attention)")
	fs.BoolVar(&o.graph, "graph", false, "print the model's expression graph in execution order (node, op, shape, parameters) instead of the heads")
	fs.StringVar(&o.dot, "dot", "", "write the model's expression graph to this file in graphviz DOT (Gorgonia's ToDot)")
	fs.BoolVar(&o.trainGraph, "train", false, "with -graph or -dot: the training graph (the run's batch size, with gradients) instead of the forward graph")
	if helped, err := cli.Parse(fs, args, usage, stderr); helped || err != nil {
		return err
	}
	o.notices = stderr
	if err := kernels.Check(); err != nil {
		return err
	}
	if o.checkpoint == "" && o.run != "" {
		return showRun(o, fs, stdout)
	}
	if o.checkpoint == "" {
		return errors.New("-checkpoint is required (or -run DIR to show a training run)")
	}
	if o.trainGraph && !o.graph && o.dot == "" {
		return errors.New("-train needs -graph or -dot")
	}
	if o.graph || o.dot != "" {
		return showGraph(o, stdout)
	}
	mode, err := colorMode(o.color, stdout)
	if err != nil {
		return err
	}
	ablationMode, err := ablation.ParseMode(o.ablation)
	if err != nil {
		return errors.Wrap(err, "-ablation")
	}
	o.ablation = string(ablationMode)
	if len(o.runs) > 1 && o.html == "" {
		return errors.New("-run: with -checkpoint, several -run are drawn only on the -html page (add -html FILE, or drop -checkpoint to compare the runs)")
	}
	if o.run != "" && o.html == "" {
		return errors.New("-run: only the -html page uses the run directory next to -checkpoint; add -html FILE, or drop -checkpoint to show the run")
	}
	// Output paths are refused before the work; each write checks again.
	for _, out := range []struct{ flag, path string }{{"-png", o.png}, {"-html", o.html}} {
		if out.path != "" {
			if err := rundir.CheckOutput(out.path, o.inputs()); err != nil {
				return errors.Wrap(err, out.flag)
			}
		}
	}
	if err := checkFlagUse(fs, o); err != nil {
		return err
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
	if o.html != "" {
		if err := r.writeHTML(o.html); err != nil {
			return err
		}
	}
	if o.json {
		return r.writeJSON(stdout)
	}
	// With a file written, the terminal gets the heads' table and where the
	// file went, not every heatmap again.
	r.opts.summary = r.opts.summary || o.png != "" || o.html != ""
	if err := r.writeText(stdout, mode, width(stdout)); err != nil {
		return err
	}
	for _, path := range []string{o.png, o.html} {
		if path != "" {
			if _, err := fmt.Fprintf(stdout, "wrote %s\n", path); err != nil {
				return errors.Wrap(err, "writing output")
			}
		}
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
	var training *htmlview.Training
	var compare []htmlview.Training
	if o.html != "" {
		var err error
		if training, err = readTraining(o); err != nil {
			return report{}, err
		}
		if compare, err = compareTraining(o); err != nil {
			return report{}, err
		}
	}
	op, err := open.Open(o.checkpoint, open.Options{Data: o.data, Notices: o.notices})
	if err != nil {
		return report{}, err
	}
	m, task := op.Model, op.Task
	if err := op.UsePath(o.path); err != nil {
		return report{}, err
	}
	userTokens, err := cli.ParseTokens(o.tokens, open.TokenNames(task))
	if err != nil {
		return report{}, err
	}
	cfg := m.Config
	if err := checkRunConfig(training, op.Config); err != nil {
		return report{}, err
	}
	if err := checkRunHeads(training, cfg); err != nil {
		return report{}, err
	}
	if err := checkMemory(cfg, o.samples); err != nil {
		return report{}, err
	}
	if err := checkIndex("-layer", o.layer, cfg.Layers, "layer", ""); err != nil {
		return report{}, err
	}
	if err := checkIndex("-head", o.head, cfg.Heads, "head", " per layer"); err != nil {
		return report{}, err
	}
	if err := checkWindows(task, userTokens, o); err != nil {
		return report{}, err
	}
	shown, err := lengthTask(task, op.Config.Task, cfg, o.length)
	if err != nil {
		return report{}, err
	}
	ex, err := example(shown, cfg, userTokens, o.seed)
	if err != nil {
		return report{}, err
	}
	fw, err := analysis.Forward(m, ex.tokens, ex.targets, ex.scored)
	if err != nil {
		return report{}, errors.Wrapf(err, "checkpoint %s", o.checkpoint)
	}
	cache, err := examplesRun(m, task, ex, o)
	if err != nil {
		return report{}, err
	}
	pool, err := analysis.ScoreHeads(cache, task, o.allRows)
	if err != nil {
		return report{}, err
	}
	r := report{opts: o, step: op.Step, task: task, cfg: cfg, dtype: m.Dtype, ex: ex, fw: fw, roles: pool.Roles, pool: pool, training: training, compare: compare}
	if o.circuits {
		if r.circuits, err = circuits(cache, task, o); err != nil {
			return report{}, err
		}
	}
	if o.ablate {
		if r.ablation, err = analysis.Ablate(m, task, op.Config.Train.EvalSize, op.Config.Seed, ablation.Mode(o.ablation), pool.Roles); err != nil {
			return report{}, err
		}
	}
	for _, p := range m.Params {
		r.params += p.Value.Shape().TotalSize()
	}
	if o.html != "" {
		if r.pageExamples, err = heldOut(m, task, op.Config.Seed, pageExamples(cfg, task.SeqLen(), o.samples)); err != nil {
			return report{}, err
		}
		if r.graph, err = forwardSummary(m, op.Config); err != nil {
			return report{}, err
		}
	}
	return r, nil
}

// checkWindows refuses what needs examples of the task when a text model
// was opened without its text (a lone checkpoint without -data): only
// the tokens the user gives can be shown.
func checkWindows(task data.Task, userTokens []int, o options) error {
	if data.HasWindows(task) {
		return nil
	}
	need := ""
	switch {
	case userTokens == nil:
		need = "the example shown (or give -tokens)"
	case o.ablate:
		need = "-ablate"
	case o.circuits:
		need = "-circuits"
	case o.mean:
		need = "-mean"
	case o.html != "":
		need = "the -html page's held-out examples"
	case o.length != 0:
		need = "-length"
	default:
		return nil
	}
	return errors.Errorf("%s draws windows of the text %s was trained on: name that file with -data FILE", need, o.checkpoint)
}

// examplesRun is the one forward every analysis that reads a run shares:
// over -samples examples of the task, or over the sequence shown when the
// task draws none (a text model opened without its text). It keeps the
// attention weights, and with -circuits what the circuit analyses read.
func examplesRun(m *model.Model, task data.Task, ex sequence, o options) (*analysis.Cache, error) {
	b := &data.Batch{Size: 1, SeqLen: len(ex.tokens), Tokens: ex.tokens, Targets: ex.targets, Mask: ex.scored}
	if data.HasWindows(task) {
		var err error
		if b, err = analysis.Examples(task, o.samples, o.seed); err != nil {
			return nil, err
		}
	}
	names := analysis.Weights(m)
	if o.circuits {
		names = analysis.Circuit(m)
	}
	return analysis.RunWithCache(m, b, names...)
}

// circuits are the induction papers' measures: those that read a run from
// the shared one (c), prefix matching on its own sequences of repeated
// random tokens, and activation patching from c into runs of corrupted
// examples.
func circuits(c *analysis.Cache, task data.Task, o options) (*analysis.Circuits, error) {
	out, err := analysis.Measure(c.Model, o.samples, o.seed)
	if err != nil {
		return nil, err
	}
	if out.DirectLogit, err = analysis.DirectLogitAttribution(c); err != nil {
		return nil, err
	}
	if task.Name() == "induction" {
		if out.Patching, err = analysis.Patch(c, task, o.seed); err != nil {
			return nil, err
		}
		if out.ICL, err = analysis.ICL(c, task); err != nil {
			return nil, err
		}
	}
	if out.LogitLens, err = analysis.LogitLens(c); err != nil {
		return nil, err
	}
	return out, nil
}

// checkFlagUse refuses flags that would be ignored or cannot do what they
// say: -ablation without -ablate, an empty -tokens, a -png file that is not
// a .png.
func checkFlagUse(fs *flag.FlagSet, o options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["ablation"] && !o.ablate:
		return errors.New("-ablation is used only with -ablate (add -ablate, or drop -ablation)")
	case set["tokens"] && strings.TrimSpace(o.tokens) == "":
		return errors.New(`-tokens is empty: give token ids or names, e.g. -tokens "3 1 4 SEP 3 1 4" (leave it out for an example of the task)`)
	case o.png != "" && !strings.EqualFold(filepath.Ext(o.png), ".png"):
		return errors.Errorf("-png %s: writes a PNG image; give a file name ending in .png", msg.Quote(o.png))
	case set["summary"] && (o.json || o.png != "" || o.html != ""):
		return errors.New("-summary prints the heads' table alone; it does not combine with -json, -png or -html")
	}
	return nil
}

// lengthTask is the task whose example inspect shows: the checkpoint's, or
// with -length the same task at that length, refused beyond a learned
// position table.
func lengthTask(task data.Task, taskCfg data.TaskConfig, cfg model.Config, length int) (data.Task, error) {
	if length == 0 {
		return task, nil
	}
	at, err := data.AtLength(taskCfg, length)
	if err != nil {
		return nil, errors.Wrapf(err, "-length %d", length)
	}
	if limit := cfg.MaxLength(); limit > 0 && at.SeqLen() > limit {
		return nil, errors.Errorf("-length %d: the example has %d positions, beyond the model's learned position table of %d (only sinusoidal, rope, alibi and no positions run at any length)", length, at.SeqLen(), limit)
	}
	return at, nil
}

// checkMemory refuses a -samples whose scoring batch would not fit: the
// inference graph holds about 4 (samples, H, T, T) tensors per layer, and
// scoreHeads a float64 copy of the attention. The estimate of a training
// step of that batch (forward and backward, so twice the graph) bounds both.
func checkMemory(cfg model.Config, samples int) error {
	est := cfg.EstimateBytes(samples, 0)
	if est > model.MaxMemory {
		return errors.Errorf("-samples %d: scoring the heads of this model (%d layers of %d heads, context %d) needs an estimated %.1f GiB (limit %.1f GiB); use a smaller -samples",
			samples, cfg.Layers, cfg.Heads, cfg.Context, est/(1<<30), float64(model.MaxMemory)/(1<<30))
	}
	return nil
}

// checkSequenceMemory refuses -tokens too long to inspect: the forward
// graph of one sequence of t positions (bounded as a training step of it),
// and the attention maps (Layers x Heads x t x t) that every view keeps as
// float64 and -json and -html also write as text (about 12 bytes each).
func checkSequenceMemory(cfg model.Config, t int) error {
	at := cfg
	at.Context = t
	maps := float64(cfg.Layers) * float64(cfg.Heads) * float64(t) * float64(t)
	est := at.EstimateBytes(1, 0) + maps*(8+12)
	if est > model.MaxMemory {
		return errors.Errorf("-tokens: %d tokens need an estimated %.1f GiB to inspect (attention maps of %s x %s x %d x %d positions; limit %.1f GiB); give fewer tokens",
			t, est/(1<<30), count(cfg.Layers, "layer"), count(cfg.Heads, "head"), t, t, float64(model.MaxMemory)/(1<<30))
	}
	return nil
}

// checkIndex refuses a -layer or -head outside the model, naming the valid
// ones: "the model has 2 layers (0..1)", "1 head per layer (only head 0)".
func checkIndex(flagName string, v, n int, noun, per string) error {
	if v >= -1 && v < n {
		return nil
	}
	valid := fmt.Sprintf("0..%d", n-1)
	if n == 1 {
		valid = "only " + noun + " 0"
	}
	return errors.Errorf("%s %d does not exist: the model has %s%s (%s)", flagName, v, count(n, noun), per, valid)
}

// sequence is the one sequence whose heatmaps are shown.
type sequence struct {
	tokens  []int
	targets []int     // next token; meaningless where scored is 0
	scored  []float64 // 1 where the prediction is scored (the task's mask), else 0
	drawn   bool      // drawn from the task rather than given with -tokens
	// taskScored is the task's own mask (length SeqLen), for saying which
	// positions it scores when -tokens is shorter.
	taskScored []float64
	// misplacedSep is the first position where -tokens has SEP and the task
	// has not, or the reverse; -1 when the separators sit where the task's
	// do (or the task has none).
	misplacedSep int
}

// example returns the user's tokens (validated against the model) or one
// example of the task drawn from seed. For user tokens the target of
// position t is token t+1, scored where the task's mask scores position t;
// the last position has no target.
func example(task data.Task, cfg model.Config, user []int, seed uint64) (sequence, error) {
	t := task.SeqLen()
	s := sequence{tokens: make([]int, t), targets: make([]int, t), scored: make([]float64, t)}
	if data.HasWindows(task) {
		task.Sample(rand.New(rand.NewPCG(seed, exampleStream)), s.tokens, s.targets, s.scored)
	} else {
		for i := range s.scored {
			s.scored[i] = 1 // the text task scores every position
		}
	}
	if user == nil {
		s.drawn, s.misplacedSep = true, -1
		return s, nil
	}
	if limit := cfg.MaxLength(); limit > 0 && len(user) > limit {
		return sequence{}, errors.Errorf("-tokens: %d tokens is longer than the model's context of %d", len(user), limit)
	}
	if err := checkSequenceMemory(cfg, len(user)); err != nil {
		return sequence{}, err
	}
	for i, id := range user {
		if id < 0 || id >= cfg.Vocab {
			return sequence{}, errors.Errorf("-tokens: token %d at position %d is outside the vocabulary [0, %d)", id, i, cfg.Vocab)
		}
	}
	drawn := s
	s = sequence{tokens: user, targets: make([]int, len(user)), scored: make([]float64, len(user)), taskScored: drawn.scored, misplacedSep: -1}
	for i := 0; i+1 < len(user); i++ {
		s.targets[i] = user[i+1]
		if i < len(drawn.scored) {
			s.scored[i] = drawn.scored[i]
		}
	}
	if sep := analysis.Separator(task); sep != heads.NoSeparator {
		for i, id := range user {
			if (id == sep) != (drawn.tokens[i] == sep) {
				s.misplacedSep = i
				break
			}
		}
	}
	return s, nil
}

// writeJSONLine prints v as one line of JSON through escape.JSON: the
// labels and paths it holds keep their real characters, but a control,
// C1 or format character travels as a \u escape, never raw.
func writeJSONLine(w io.Writer, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return errors.Wrap(err, "encoding JSON")
	}
	_, err = w.Write(append(escape.JSON(doc), '\n'))
	return errors.Wrap(err, "writing JSON")
}
