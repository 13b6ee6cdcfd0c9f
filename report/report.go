package report

import (
	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/tokenizer"
)

// Options are what a user asks to see of a checkpoint (inspect's flags).
type Options struct {
	Checkpoint string // what the model was opened from, as the user named it, for messages and the page's run
	// Tokens is the sequence shown, ids or token names; "" draws one
	// example of the task from Seed. Text gives it as text instead, in the
	// model's tokenizer (a model trained elsewhere, or a text model).
	Tokens, Text string
	// Layers and Heads pick the heads the views show and the per-head work
	// (-ablate, and -circuits' activation patching) runs on: a layer's
	// picked heads in each picked layer. The default Layers is every layer
	// of a model of at most MaxHeadsShown heads, else layer 0 alone in the
	// PNG and the StrongestShown heads of highest role score in the text
	// view (whose table still lists every head). The JSON document holds
	// the heads they pick (default: every one).
	Layers, Heads Pick
	Samples       int           // examples the head roles pool over, in [1, MaxSamples]; 0: DefaultSamples, or DefaultPretrainedSamples for a model trained elsewhere
	Seed          uint64        // of the example shown and of the scoring examples
	AllRows       bool          // score the roles at every query position, not only those the task scores
	Mean          bool          // the heatmaps are each head's mean over the Samples examples
	Length        int           // show an example of this task length; 0: the trained one
	Circuits      bool          // also the circuit metrics (analysis.Measure and the rest)
	Ablate        bool          // also remove each head in turn on the run's held-out set
	Ablation      ablation.Mode // what replaces a removed head's output; "": zero
	AllLogits     bool          // the JSON document holds every logit even for a wide vocabulary
	Patch         PatchOptions  // -patch and its inputs
	// Activations are the activations WriteActivations saves, each a name
	// or glob, the lab's or TransformerLens's, run on the sequence shown.
	Activations []string
	// Page also computes what the HTML page adds: held-out examples, the
	// forward graph's summary and the curves of the run directories (Runs:
	// the first with its head roles, the others' curves beside it;
	// none: the checkpoint's directory, when it holds a run).
	Page bool
	Runs []string
	// Progress, when set, hears how far each long phase of Build has come:
	// done of total units of the phase (total 0: not known, the time
	// alone tells), unit what they are ("heads", or BytesUnit for the
	// weights read). nil hears nothing; report writes no progress itself.
	Progress func(phase string, done, total int64, unit string)
}

// BytesUnit is the unit of the phase that counts the weights' bytes read:
// internal/progress.Bytes, which inspect's progress line shows as MiB,
// named here so that report need not import the line's drawing (a test
// holds the two equal).
const BytesUnit = "bytes"

// MaxHeadsShown is the most heads whose heatmaps the views show at once by
// default: a model with more (GPT-2 small has 144) shows the strongest
// heads (StrongestShown) on a terminal, one layer in a PNG.
const MaxHeadsShown = 32

// DefaultSamples and DefaultPretrainedSamples are the examples the roles
// pool over when Options.Samples is 0: a model trained elsewhere is
// thousands of times the work per example of the lab's toy models.
const (
	DefaultSamples           = 64
	DefaultPretrainedSamples = 8
)

// Report is what inspect shows of a checkpoint, as data: Build computes
// it, its methods give each view.
type Report struct {
	Options Options
	Step    int          // the checkpoint's
	Source  string       // where a model trained elsewhere comes from (Subject.Origin); "" for the lab's
	Task    data.Task    // the checkpoint's
	Config  model.Config // the model's
	Dtype   tensor.Dtype
	Params  int // weights in the checkpoint
	// Sequence is the sequence shown and Forward the model's pass on it.
	Sequence Sequence
	Forward  analysis.Pass
	// Pooled holds every head's role ([layer][head]) and mean weights over
	// the Samples examples.
	Pooled analysis.Pooled
	// RolesOnSequence: the roles were scored on the sequence shown, not on
	// examples of the task (a text model opened without its text, or text a
	// user gave a model trained elsewhere).
	RolesOnSequence bool
	// RolesOnGiven: that sequence is the text or tokens the user gave a
	// model trained elsewhere, scored at every position (scoredOn).
	RolesOnGiven bool
	// TaskNote says how the task's examples depart from what it usually
	// draws (data.RepeatedTokens.Note: with replacement, from a small
	// vocabulary); "" when they do not.
	TaskNote  string
	Tokenizer string             // the tokenizer's name, "" for a toy task's labels
	Circuits  *analysis.Circuits // with Options.Circuits
	Ablation  *ablation.Table    // with Options.Ablate
	Patching  *Patching          // with Options.Patch
	// With Options.Page: the run's held-out examples, the summary of the
	// scoring run's graph (Passes[0]: its batch and length), the run's
	// curves (nil when there is none) and the other runs'.
	Examples []htmlview.Example
	Graph    *model.Summary
	Training *htmlview.Training
	Compare  []htmlview.Training
	// Passes are the forwards Build ran for the views, in order: one for
	// a plain view (the sequence shown is a row of the scoring examples
	// when the lengths match), one more for the page's held-out examples.
	// The analyses' own runs (circuits, -ablate) are not counted.
	Passes []Pass
	// opened are the files opening the model read or may read
	// (Subject.Inputs), for Inputs.
	opened []string
	// runExamples: the task's examples are drawn as its run drew them
	// (examples.ofRun).
	runExamples bool
	tok         tokenizer.Tokenizer // the model's (Subject.Tokenizer), for the tokens' texts
	// saved are the activations to save (Options.Activations) and
	// savedRun the run on the sequence shown that kept them.
	saved    []analysis.Saved
	savedRun *analysis.Cache
}

// Build checks every option against the opened model s before a graph is
// built, then runs the model on the sequence shown and scores every head on
// one shared cached run of the examples.
func Build(s Subject, o Options) (*Report, error) {
	if err := checkSamples(max(o.Samples, 1)); err != nil {
		return nil, err
	}
	r := &Report{Options: o}
	if o.Page {
		var err error
		if r.Training, r.Compare, err = readPageRuns(o); err != nil {
			return nil, err
		}
	}
	tokens, err := userTokens(s, o)
	if err != nil {
		return nil, err
	}
	if err := r.preparePatch(s, tokens); err != nil {
		return nil, err
	}
	ex := examplesOf(s, tokens)
	if r.Options.Samples == 0 {
		r.Options.Samples = ex.samples
	}
	r.Step, r.Source, r.Task, r.Config, r.Dtype = s.Step, s.Origin, s.Task, s.Model.Config, s.Model.Dtype
	r.opened, r.tok = s.Inputs, s.Tokenizer
	r.RolesOnSequence, r.RolesOnGiven, r.runExamples = ex.onSequence, ex.onGiven, ex.ofRun
	if s.Tokenizer != nil {
		r.Tokenizer = s.Tokenizer.Name()
	}
	if repeated, ok := s.Task.(data.RepeatedTokens); ok && !r.RolesOnSequence {
		r.TaskNote = repeated.Note()
	}
	shown, err := r.check(s, tokens)
	if err != nil {
		return nil, err
	}
	if r.Sequence, err = example(shown, r.Config, given{tokens, tokensFlag(o), r.RolesOnGiven}, o.Seed); err != nil {
		return nil, err
	}
	if err := r.checkSave(s.Model); err != nil {
		return nil, err
	}
	return r, r.analyse(s)
}

// check refuses options that do not fit the opened model and returns the
// task whose example is shown.
func (r *Report) check(s Subject, tokens []int) (data.Task, error) {
	o, cfg := r.Options, r.Config
	if !r.runExamples && o.Length != 0 {
		return nil, errors.Errorf("-length %d: %s has no task length to change; give the sequence with -text or -tokens", o.Length, o.Checkpoint)
	}
	if err := checkRunConfig(r.Training, s, o.Checkpoint); err != nil {
		return nil, err
	}
	if err := checkRunHeads(r.Training, cfg); err != nil {
		return nil, err
	}
	if err := checkMemory(cfg, int(s.Model.Dtype.Size()), s.Task.SeqLen(), o.Samples); err != nil {
		return nil, err
	}
	if err := o.Layers.check("-layer", cfg.Layers, "layer", ""); err != nil {
		return nil, err
	}
	if err := o.Heads.check("-head", cfg.Heads, "head", " per layer"); err != nil {
		return nil, err
	}
	if err := checkCircuitsMemory(cfg, o.Circuits, r.picked()); err != nil {
		return nil, err
	}
	if err := checkWindows(s.Task, tokens, o); err != nil {
		return nil, err
	}
	if err := r.checkPerHeadTime(s, len(tokens)); err != nil {
		return nil, err
	}
	return lengthTask(s.Task, s.Run, cfg, o.Length)
}

// analyse runs the plan: the model on the sequence shown and every
// analysis asked for.
func (r *Report) analyse(s Subject) error {
	o, m := r.Options, s.Model
	p, err := r.plan(m)
	if err != nil {
		return err
	}
	r.phase(r.scoring(), 0, 0, "")
	cache, err := r.run(m, p.batch, p.keep)
	if err != nil {
		return errors.Wrapf(err, "checkpoint %s", o.Checkpoint)
	}
	if r.Forward, err = r.shownPass(m, cache, p.shownRow); err != nil {
		return errors.Wrapf(err, "checkpoint %s", o.Checkpoint)
	}
	graph := cache.Graph // read now: the cache goes once the analyses have read it
	if r.Pooled, err = analysis.ScoreHeads(cache, r.Task, o.AllRows); err != nil {
		return err
	}
	if o.Circuits {
		if r.Circuits, err = r.circuits(cache, !r.RolesOnSequence); err != nil {
			return err
		}
	}
	if (o.Ablate || o.Page) && p.batch.Size > 1 && p.shownRow >= 0 {
		// The analyses that read the run are done: the pass shown keeps
		// its own logits, and the batch's go before the runs that follow.
		r.Forward.Logits = r.Forward.Logits.Own()
	}
	if o.Ablate {
		if r.Ablation, err = r.ablate(s); err != nil {
			return err
		}
	}
	if err := r.runSaved(m); err != nil {
		return err
	}
	if r.Patching != nil {
		if err := r.patch(m); err != nil {
			return err
		}
	}
	for _, param := range m.Params {
		r.Params += param.Len()
	}
	if !o.Page {
		return nil
	}
	r.phase("the page's held-out examples", 0, 0, "")
	if r.Examples, err = r.heldOut(m, examplesSeed(s), pageExamples(r.Config, r.Task.SeqLen(), o.Samples)); err != nil {
		return err
	}
	r.Graph = &graph
	return nil
}

// plan is what a view runs, decided before anything runs: the one batch
// every analysis that reads a run shares, the row of it that is the
// sequence shown (-1: the sequence runs on its own), and the activations
// the run keeps.
type plan struct {
	batch    *data.Batch
	shownRow int
	keep     []string
}

// plan decides the view's batch: Samples examples of the task with the
// sequence shown as their first row when the lengths match, so that one
// forward serves both; or the sequence shown alone when the roles are
// scored on it (a text model opened without its text, text given to a
// model trained elsewhere). It keeps the attention weights, and with
// Circuits what the circuit analyses read.
func (r *Report) plan(m *model.Model) (plan, error) {
	s := r.Sequence
	p := plan{keep: analysis.Weights(m), shownRow: 0}
	if r.Options.Circuits {
		p.keep = analysis.Circuit(m)
	}
	if r.RolesOnSequence {
		p.batch = &data.Batch{Size: 1, SeqLen: len(s.Tokens), Tokens: s.Tokens, Targets: s.Targets, Mask: s.Scored}
		return p, nil
	}
	var err error
	if p.batch, err = analysis.Examples(r.Task, r.Options.Samples, r.Options.Seed); err != nil {
		return plan{}, err
	}
	if len(s.Tokens) != p.batch.SeqLen {
		p.shownRow = -1
		return p, nil
	}
	tokens, targets, mask := p.batch.Row(0)
	copy(tokens, s.Tokens)
	copy(targets, s.Targets)
	copy(mask, s.Scored)
	return p, nil
}

// run is the plan's one forward over its batch, recorded in Passes.
func (r *Report) run(m *model.Model, b *data.Batch, keep []string) (*analysis.Cache, error) {
	r.Passes = append(r.Passes, Pass{Batch: b.Size, Length: b.SeqLen})
	return analysis.RunWithCache(m, b, keep...)
}

// shownPass is the model's pass on the sequence shown: row shownRow of the
// shared run, or a forward of its own when the plan could not fit it there.
func (r *Report) shownPass(m *model.Model, cache *analysis.Cache, shownRow int) (analysis.Pass, error) {
	if shownRow >= 0 {
		return cache.Pass(shownRow)
	}
	s := r.Sequence
	r.Passes = append(r.Passes, Pass{Batch: 1, Length: len(s.Tokens)})
	return analysis.Forward(m, s.Tokens, s.Targets, s.Scored)
}

// Pass is one forward a view ran: its batch size and sequence length.
type Pass struct {
	Batch, Length int
}

// circuits are the induction papers' measures: those that read a run from
// the shared one (c), prefix matching on its own sequences of repeated
// random tokens, and, when c holds examples of a task of repeats,
// activation patching from c into runs of corrupted examples and the ICL
// score. Each is a phase of Options.Progress.
func (r *Report) circuits(c *analysis.Cache, examples bool) (*analysis.Circuits, error) {
	o, task := r.Options, r.Task
	sel := r.picked()
	out, err := analysis.MeasureHeads(c.Model, sel.Layers, sel.Heads, o.Samples, o.Seed, func(stage string, done, total int) {
		r.phase("circuits: "+stage, done, total, measureUnits[stage])
	})
	if err != nil {
		return nil, err
	}
	r.phase("circuits: direct logit attribution", 0, 0, "")
	if out.DirectLogit, err = analysis.DirectLogitAttribution(c); err != nil {
		return nil, err
	}
	if examples && analysis.Repeats(task) {
		if out.Patching, err = analysis.Patch(c, task, analysis.Corruption(c.Batch, c.Model.Config.Vocab, o.Seed), r.perHead(), r.counter("circuits: activation patching", "heads")); err != nil {
			return nil, err
		}
		r.phase("circuits: in-context learning", 0, 0, "")
		if out.ICL, err = analysis.ICL(c, task); err != nil {
			return nil, err
		}
	}
	r.phase("circuits: logit lens", 0, 0, "")
	if out.LogitLens, err = analysis.LogitLens(c); err != nil {
		return nil, err
	}
	out.LogitLensReadout = analysis.LensReadout(c.Model.Config)
	return out, nil
}

// measureUnits are what each stage of analysis.Measure counts.
var measureUnits = map[string]string{"composition": "layer pairs", "prefix matching": "sequences"}

// scoring names the phase of the run every analysis reads.
func (r *Report) scoring() string {
	if r.RolesOnSequence {
		return "running the model on the sequence"
	}
	return "scoring " + msg.Count(r.Options.Samples, "example")
}

// phase tells Options.Progress that phase has done of total units.
func (r *Report) phase(name string, done, total int, unit string) {
	if p := r.Options.Progress; p != nil {
		p(name, int64(done), int64(total), unit)
	}
}

// counter is the callback an analysis counts one phase's units with; nil
// without Options.Progress.
func (r *Report) counter(name, unit string) func(done, total int) {
	if r.Options.Progress == nil {
		return nil
	}
	return func(done, total int) { r.phase(name, done, total, unit) }
}

// ablate removes each head in turn: on the run's held-out set, or for a
// model trained elsewhere (which has no run) on the sequence the user gave
// (the one its roles were scored on) or else on examples of its task, as
// many as a forward per head allows.
func (r *Report) ablate(s Subject) (*ablation.Table, error) {
	o, m := r.Options, s.Model
	mode := o.Ablation
	if mode == "" {
		mode = ablation.Zero
	}
	if r.RolesOnGiven {
		s := r.Sequence
		set := &data.Batch{Size: 1, SeqLen: len(s.Tokens), Tokens: s.Tokens, Targets: s.Targets, Mask: s.Scored}
		return analysis.AblateOn(m, set, mode, r.perHead(), r.Pooled.Roles, r.counter("ablating heads", "heads"))
	}
	return analysis.Ablate(m, r.Task, r.ablationSize(s), examplesSeed(s), mode, r.perHead(), r.Pooled.Roles, r.counter("ablating heads", "heads"))
}

// examples says where the views' examples come from: the one place they
// tell a lab model's task from a model trained elsewhere (examplesOf).
type examples struct {
	// ofRun: the task is the run's, its examples drawn as the run's
	// evaluations drew them: -ablate removes heads on its held-out set,
	// -length changes its length, exact match counts. A model trained
	// elsewhere (a fine-tuned one's too) is read on repeated random tokens
	// of its tokenizer, as many as a forward per head allows.
	ofRun bool
	// samples is Options.Samples' default: a model trained elsewhere is
	// thousands of times the work per example of the lab's toy models.
	samples int
	// onSequence, onGiven are Report.RolesOnSequence and RolesOnGiven.
	onSequence, onGiven bool
}

// examplesOf is where the examples come from: a lab model's from its
// task, or the sequence shown when the task draws none (a text model
// opened without its text); a model trained elsewhere's from the text or
// tokens given, else from repeated tokens of its tokenizer, its task.
func examplesOf(s Subject, tokens []int) examples {
	ex := examples{ofRun: true, samples: DefaultSamples}
	if s.Origin != "" { // a model trained elsewhere
		ex = examples{samples: DefaultPretrainedSamples, onGiven: tokens != nil}
	}
	ex.onSequence = ex.onGiven || !data.HasWindows(s.Task)
	return ex
}

// examplesSeed is the seed the page's held-out examples and -ablate's
// draw with: the run's, as its evaluations drew; a model trained elsewhere
// has no run, and its repeated tokens draw with noRunSeed.
func examplesSeed(s Subject) uint64 {
	if s.Run == nil {
		return noRunSeed
	}
	return s.Run.Seed
}

// noRunSeed is the seed of the examples drawn for a model without a run
// (examplesSeed): a default run's, which such a model was once given.
const noRunSeed = 1

// ablationSize is how many examples -ablate removes the heads on: the
// run's held-out set, or for a model read as trained elsewhere as many
// as a forward per head picked allows.
func (r *Report) ablationSize(s Subject) int {
	if r.runExamples {
		return analysis.AblationSetSize(s.Run.Train.EvalSize)
	}
	return analysis.PerHeadExamples(len(r.perHead().Of(r.Config)), r.Options.Samples, r.Task.SeqLen())
}
