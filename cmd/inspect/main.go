package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/internal/cli"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/progress"
	"github.com/attnscope/attnscope/report"
)

func main() { cli.Main("inspect", run) }

// options are the parsed flags: what to compute (report.Options) and
// which outputs to write.
type options struct {
	r            report.Options
	data         string    // -data: the text file a text model's windows come from
	vocab        string    // -vocab: a nanoGPT character model's meta.pkl
	path         string    // -path: the attention path to run on; "": the checkpoint's
	notices      io.Writer // where the files read are named (stderr, through the progress line)
	run          string    // the first -run
	json         bool
	png          string
	html         string
	save         string // -save-activations: the safetensors file of the activations -activations names
	color        string
	ablation     string // how a removed head is replaced: zero or mean
	summary      bool   // print only the model and the heads' table
	graph        bool   // print the expression graph's summary instead of the heads
	dot          string // write the expression graph as DOT to this file
	trainGraph   bool   // -graph and -dot show the training graph (-training-graph)
	corpus       string // -corpus: score the heads over windows of this text instead
	windows      int    // -windows: how many
	windowLength int    // -window-length: tokens in each
}

const usage = `usage: inspect MODEL [-tokens IDS] [-layer LIST] [-head LIST] [-json] [-png FILE]
               [-html FILE [-run DIR]] [-color auto|always|never] [-examples N] [-seed S]
               [-all-rows] [-mean] [-path fused|gorgonia] [-ablate [-ablation zero|mean]]
               [-save-activations FILE.safetensors -activations NAMES] [-patch KIND
               -corrupt-text|-corrupt-tokens IN [-answer T -wrong T] [-metric M]]
       inspect MODEL -graph [-dot FILE] [-training-graph] [-path fused|gorgonia]
       inspect MODEL -corpus FILE [-windows N] [-window-length T] [-seed S] [-json]
       inspect -run DIR [-run DIR ...] [-json] [-png FILE]

Shows what every attention head of a model does: heatmaps of its weights on
one sequence, the model's predictions, and each head's role (previous-token,
offset k, induction, ...) scored over -examples examples of the task. MODEL
(or -checkpoint MODEL) is a run directory or a checkpoint written by train, a
Hugging Face directory or a nanoGPT ckpt.pt. -json and -png write the same
as data and as an image; -html writes it all as one interactive page that
opens offline. -ablate also runs the run's held-out set once per head with
that head removed and lists the heads by how much the loss rises.
-save-activations writes the activations -activations names (the lab's or
TransformerLens's names, or globs: blocks.*.hook_resid_post) on the
sequence shown, in TransformerLens's shapes, for numpy to read. -patch
patches one component at a time from the clean input into the corrupted one.
-graph prints the model's expression graph instead, one node a line; -dot
writes it for graphviz. -run DIR alone shows a training run: its loss and
accuracy curves, and each head's strongest role through training with the
step it formed (roles.jsonl). -corpus FILE scores every head over many
windows of a text instead (previous-token, duplicate-token, induction, the
first token, self, entropy) and prints each score's mean and spread.

flags:
`

// run is the whole command: flags and the model in args, output and -h on
// stdout, notes and progress on stderr.
func run(args []string, stdout, stderr io.Writer) error {
	f, ok := stderr.(*os.File)
	if !ok {
		// A writer of the caller's (a test's buffer) gets notes, not
		// progress, which would depend on how long the work took.
		return runWith(args, stdout, stderr, nil)
	}
	line := progress.NewLine(stderr, progress.IsTerminal(f), progress.DefaultWidth)
	if progress.IsTerminal(f) {
		line.Resize(progress.Width(f))
		defer progress.WatchResize(f, line.Resize)()
	}
	defer line.Ticking(time.Second)()
	return runWith(args, stdout, stderr, line)
}

// runWith is run with its progress reported on line (stderr's): the
// phases of the work and the files written, cleared before stdout is
// written; nil reports none.
func runWith(args []string, stdout, stderr io.Writer, line *progress.Line) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.r.Checkpoint, "checkpoint", "", "the model: a run directory or a checkpoint file written by train, a Hugging Face directory (config.json) of GPT-2, Llama, Mistral or Qwen 2, or a nanoGPT ckpt.pt; or give it as the first argument")
	fs.StringVar(&o.data, "data", "", "the text file a text model was trained on, for its windows (a lone checkpoint reads no file otherwise; a run directory reads the one its run recorded)")
	fs.StringVar(&o.r.Text, "text", "", "text to show, in the model's tokenizer (a model trained elsewhere, or a text model): its tokens' heatmaps, and for a model trained elsewhere the roles scored on it")
	fs.StringVar(&o.vocab, "vocab", "", "a nanoGPT character model's meta.pkl (default: the one beside its ckpt.pt)")
	fs.StringVar(&o.r.Tokens, "tokens", "", `token ids to show, e.g. "3 1 4 1 16 3 1 4" (default: one example of the checkpoint's task drawn with -seed)`)
	fs.Func("layer", fmt.Sprintf("show only these layers: a number, a list with ranges (0,5-7) or all (default: all, or for a model of more than %d heads the heatmaps of the %d of highest role score); -ablate, -circuits' patching and -patch run on the heads picked", report.MaxHeadsShown, report.StrongestShown), o.r.Layers.Flag())
	fs.Func("head", "show only these heads of each layer shown: a number, a list with ranges (0,5-7) or all (default: all)", o.r.Heads.Flag())
	fs.BoolVar(&o.json, "json", false, "print one JSON object (tokens, attention, logits, predictions, heads) of the heads -layer and -head select instead of heatmaps")
	fs.StringVar(&o.png, "png", "", "also write a layers x heads grid of heatmaps to this PNG file")
	fs.StringVar(&o.html, "html", "", "also write a self-contained interactive HTML report to this file")
	fs.StringVar(&o.save, "save-activations", "", "also write the activations -activations names, on the sequence shown, to this safetensors file (TransformerLens's shapes, batch first; the tokens and their labels in its metadata)")
	fs.Func("activations", "with -save-activations: the activations to save, comma-separated, each a name or glob, the lab's (blocks.0.attn.weights) or TransformerLens's (blocks.0.attn.hook_pattern, blocks.*.hook_resid_post)", report.ActivationsFlag(&o.r.Activations))
	fs.Func("run", "alone: show this run directory's curves and head roles through training (repeat -run to draw several runs together); with -html: the run whose metrics.jsonl the page plots (default: the checkpoint's directory, if it has one)", func(dir string) error {
		o.r.Runs = append(o.r.Runs, dir)
		o.run = o.r.Runs[0]
		return nil
	})
	fs.StringVar(&o.color, "color", "auto", "heatmap colours: auto, always or never")
	fs.IntVar(&o.r.Samples, "examples", 0, fmt.Sprintf("task examples the head roles are averaged over (default %d, or %d for a model trained elsewhere); -html also embeds the first %d or fewer held-out examples",
		report.DefaultSamples, report.DefaultPretrainedSamples, report.MaxPageExamples))
	fs.Uint64Var(&o.r.Seed, "seed", 1, "seed of the displayed example, of the scoring examples and of -corpus's windows")
	fs.BoolVar(&o.r.AllLogits, "all-logits", false, fmt.Sprintf("with -json: every logit, even when a sequence has more than %d (by default only each position's top %d then)", report.MaxLogitValues, report.LogitsTopK))
	fs.BoolVar(&o.r.Circuits, "circuits", false, "also the induction papers' circuit metrics: each head's prefix-matching and copying scores, and the Q/K/V composition of heads in consecutive layers")
	fs.BoolVar(&o.summary, "summary", false, "print only the model, one line per head (layer, head, role, score, entropy) and the -circuits and -ablate tables")
	fs.IntVar(&o.r.Length, "length", 0, "show one example of this task length (task.length) instead of the trained one: length generalisation (not beyond a learned position table)")
	fs.BoolVar(&o.r.AllRows, "all-rows", false, "score head roles over every query position, not only those the task scores")
	fs.BoolVar(&o.r.Mean, "mean", false, "draw each head's weights averaged over the -examples examples (axes are positions) instead of on the one sequence")
	fs.BoolVar(&o.r.Ablate, "ablate", false, "also run the run's held-out set once per head with that head removed and print the heads by importance")
	fs.StringVar(&o.ablation, "ablation", "zero", "with -ablate: replace a removed head's output by zero or by its mean over the set (mean)")
	fs.StringVar(&o.path, "path", "", "run on this attention path, fused or gorgonia (default: the checkpoint's model.attention)")
	fs.BoolVar(&o.graph, "graph", false, "print the model's expression graph in execution order (node, op, shape, parameters) instead of the heads")
	fs.StringVar(&o.dot, "dot", "", "write the model's expression graph to this file in graphviz DOT (Gorgonia's ToDot)")
	fs.BoolVar(&o.trainGraph, "training-graph", false, "with -graph or -dot: the training graph (the run's batch size, with gradients) instead of the forward graph")
	fs.StringVar(&o.corpus, "corpus", "", "score every head over windows of this UTF-8 text in the model's tokenizer and print each score's mean and spread, instead of the views of one sequence")
	fs.IntVar(&o.windows, "windows", defaultCorpusWindows, "with -corpus: the windows scored, drawn with -seed")
	fs.IntVar(&o.windowLength, "window-length", report.DefaultWindowLength, "with -corpus: tokens in each window (default: 128, or the model's context when shorter)")
	report.PatchFlags(fs, &o.r.Patch)
	cli.Rename(fs, "samples", "examples", stderr) // sample's -samples counts what it writes
	cli.Rename(fs, "train", "training-graph", stderr)
	model, helped, err := cli.ParseArgs(fs, args, usage, stdout, cli.Operand{Name: "model"})
	if helped || err != nil {
		return err
	}
	if o.r.Checkpoint, err = cli.FlagOrArg("checkpoint", o.r.Checkpoint, model); err != nil {
		return err
	}
	o.notices = stderr
	if line != nil {
		// Notices pass through the live line, which is cleared before
		// anything else is written (the output, or the error).
		defer line.Finish()
		o.notices, o.r.Progress = line, line.Update
	}
	if err := checkSamplesSet(fs, o.r.Samples); err != nil {
		return err
	}
	if err := kernels.Check(); err != nil {
		return err
	}
	if o.r.Checkpoint == "" && o.run != "" {
		return showRun(o, fs, stdout)
	}
	if o.r.Checkpoint == "" {
		return errors.New("no model: give one, e.g. inspect runs/copy (or -checkpoint runs/copy), or -run DIR to show a training run")
	}
	if o.trainGraph && !o.graph && o.dot == "" {
		return errors.New("-training-graph needs -graph or -dot")
	}
	if o.graph || o.dot != "" {
		return showGraph(o, fs, stdout)
	}
	if given := cli.Given(fs); o.corpus != "" || given["windows"] || given["window-length"] {
		return showCorpus(o, fs, stdout, line)
	}
	mode, err := colorMode(o.color, stdout)
	if err != nil {
		return err
	}
	if err := checkCheckpointFlags(fs, &o); err != nil {
		return err
	}
	subject, err := openModel(o)
	if err != nil {
		return err
	}
	r, err := report.Build(subject, o.r)
	if err != nil {
		return err
	}
	return writeOutputs(r, o, mode, stdout, line)
}

// checkCheckpointFlags refuses flags that do not combine with a model
// or would be ignored, and output paths that could not be written, before
// any work; it sets what the flags decide of o.r.
func checkCheckpointFlags(fs *flag.FlagSet, o *options) error {
	ablationMode, err := ablation.ParseMode(o.ablation)
	if err != nil {
		return errors.Wrap(err, "-ablation")
	}
	o.r.Ablation = ablationMode
	if len(o.r.Runs) > 1 && o.html == "" {
		return errors.New("-run: with a model, several -run are drawn only on the -html page (add -html FILE, or drop the model to compare the runs)")
	}
	if o.run != "" && o.html == "" {
		return errors.New("-run: only the -html page uses the run directory next to a model; add -html FILE, or drop the model to show the run")
	}
	// Output paths are refused before the work; each write checks again.
	if err := checkOutput("-png", o.png, o.inputs()); err != nil {
		return err
	}
	if err := checkOutput("-html", o.html, o.inputs()); err != nil {
		return err
	}
	if err := checkOutput("-save-activations", o.save, o.inputs()); err != nil {
		return err
	}
	o.r.Page = o.html != ""
	if err := report.CheckPatchFlags(cli.Given(fs), o.r.Patch); err != nil {
		return err
	}
	return checkFlagUse(fs, *o)
}

// checkFlagUse refuses flags that would be ignored or cannot do what they
// say: -ablation without -ablate, -mean with -summary, an empty -tokens or
// -text, a -text that is not UTF-8, a -png file that is not a .png.
func checkFlagUse(fs *flag.FlagSet, o options) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["ablation"] && !o.r.Ablate:
		return errors.New("-ablation is used only with -ablate (add -ablate, or drop -ablation)")
	case set["tokens"] && strings.TrimSpace(o.r.Tokens) == "":
		return errors.New(`-tokens is empty: give token ids or names, e.g. -tokens "3 1 4 SEP 3 1 4" (leave it out for an example of the task)`)
	case set["text"] && o.r.Text == "":
		return errors.New(`-text is empty: give the text to show (leave it out for an example of the task)`)
	case o.png != "" && !strings.EqualFold(filepath.Ext(o.png), ".png"):
		return errors.Errorf("-png %s: writes a PNG image; give a file name ending in .png", msg.Quote(o.png))
	case o.save != "" && !strings.EqualFold(filepath.Ext(o.save), ".safetensors"):
		return errors.Errorf("-save-activations %s: writes a safetensors file; give a file name ending in .safetensors", msg.Quote(o.save))
	case o.save != "" && !set["activations"]:
		return errors.New(`-save-activations needs -activations NAMES, the activations to save: e.g. -activations "blocks.*.hook_resid_post,blocks.0.attn.hook_pattern"`)
	case set["activations"] && o.save == "":
		return errors.New("-activations names what -save-activations writes; add -save-activations FILE.safetensors")
	case set["summary"] && (o.json || o.png != "" || o.html != ""):
		return errors.New("-summary prints the heads' table alone; it does not combine with -json, -png or -html")
	case o.summary && o.r.Mean:
		return errors.New("-mean draws the heatmaps as means, and -summary shows no heatmap; drop one of them")
	}
	return cli.CheckText("-text", o.r.Text)
}

// checkSamplesSet refuses -examples given as 0 or less, which would
// otherwise read as the default.
func checkSamplesSet(fs *flag.FlagSet, n int) error {
	if cli.Given(fs)["examples"] && n < 1 {
		return errors.Errorf("-examples %d: must be in [1, %d]", n, report.MaxSamples)
	}
	return nil
}
