package report

import (
	"flag"
	"fmt"
	"image"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
)

// PatchOptions are what inspect -patch asks: the kind patched (one of
// PatchKinds' names; "": no patching), the corrupted input (ids or token
// names, or text in the model's tokenizer; the clean one is the sequence
// shown, Options.Tokens or Text), the metric (MetricLogitDiff or
// MetricLoss; "": logit difference when Answer or Wrong is given, else the
// loss) and logit difference's two tokens, each given as one token.
type PatchOptions struct {
	Kind                       string
	CorruptTokens, CorruptText string
	Metric                     string
	Answer, Wrong              string
}

// The metrics -metric names.
const (
	MetricLogitDiff = "logit-diff"
	MetricLoss      = "loss"
)

// PatchFlags declares -patch and the flags that go with it on fs, into o.
func PatchFlags(fs *flag.FlagSet, o *PatchOptions) {
	fs.StringVar(&o.Kind, "patch", "", "also patch activations from the clean input (-text or -tokens) into the corrupted one (-corrupt-text or -corrupt-tokens), one component a run, TransformerLens's activation patching, or all at once estimated by attribution patching (attribution-*): "+strings.Join(PatchKindNames(), ", "))
	fs.StringVar(&o.CorruptText, "corrupt-text", "", "with -patch: the corrupted input, as text (as many tokens as the clean one)")
	fs.StringVar(&o.CorruptTokens, "corrupt-tokens", "", "with -patch: the corrupted input, as token ids or names (as many as the clean one)")
	fs.StringVar(&o.Metric, "metric", "", "with -patch: logit-diff (the -answer token's logit minus the -wrong one's after the last position) or loss (the clean text's next-token loss); default logit-diff with -answer, else loss")
	fs.StringVar(&o.Answer, "answer", "", "with -patch -metric logit-diff: the right next token after the input (one token)")
	fs.StringVar(&o.Wrong, "wrong", "", "with -patch -metric logit-diff: the wrong next token it is held against (one token)")
}

// patchFlags are the flags that go with -patch alone.
var patchFlags = []string{"corrupt-text", "corrupt-tokens", "metric", "answer", "wrong"}

// CheckPatchFlags refuses, before anything is read, -patch's flags without
// it, a kind or metric it does not know, and inputs or tokens missing or
// given twice; given are the flags given (cli.Given).
func CheckPatchFlags(given map[string]bool, o PatchOptions) error {
	if o.Kind == "" {
		for _, name := range patchFlags {
			if given[name] {
				return errors.Errorf("-%s is used only with -patch KIND (add -patch, or drop -%s)", name, name)
			}
		}
		return nil
	}
	metric := o.metric()
	switch {
	case patchKind(o.Kind) == nil:
		return errors.Errorf("-patch %s: no such kind; want one of %s", msg.Quote(o.Kind), strings.Join(PatchKindNames(), ", "))
	case metric != MetricLogitDiff && metric != MetricLoss:
		return errors.Errorf("-metric %s: want logit-diff or loss", msg.Quote(metric))
	case !given["text"] && !given["tokens"]:
		return errors.New("-patch needs the clean input: give it with -text or -tokens, and the corrupted one with -corrupt-text or -corrupt-tokens")
	case given["corrupt-text"] == given["corrupt-tokens"]:
		return errors.New("-patch needs the corrupted input once: give -corrupt-text or -corrupt-tokens, not both nor neither")
	case metric == MetricLoss && (given["answer"] || given["wrong"]):
		return errors.New("-answer and -wrong name logit difference's tokens; -metric loss reads neither (drop them, or use -metric logit-diff)")
	case metric == MetricLogitDiff && (o.Answer == "" || o.Wrong == ""):
		return errors.New(`-metric logit-diff needs both tokens: -answer TEXT (the right next token) and -wrong TEXT (the one it is held against), e.g. -answer " Mary" -wrong " John"`)
	}
	return nil
}

// metric is the metric o asks for, its default filled in.
func (o PatchOptions) metric() string {
	switch {
	case o.Metric != "":
		return o.Metric
	case o.Answer != "" || o.Wrong != "":
		return MetricLogitDiff
	}
	return MetricLoss
}

// PatchKind is one kind -patch runs: its name, the activations the clean
// run keeps, the result's axes, and the analysis that patches it. Further
// kinds (attribution patching) join PatchKinds.
type PatchKind struct {
	Name string
	// Activation is TransformerLens's name of what is patched, block N:
	// "blocks.N.attn.hook_z".
	Activation string
	// Axes name the result's axes in order: "layer" then "pos", "head" or
	// "head" and "pos".
	Axes []string
	Keep func(cfg model.Config) []string
	// Work is the forwards Run runs on one sequence of t tokens, for the
	// heads hs names (nil: every one), estimated before it starts.
	Work func(cfg model.Config, hs ablation.Heads, t int) (analysis.Work, error)
	Run  func(clean *analysis.Cache, corrupt [][]int, metric analysis.Metric, hs ablation.Heads, progress func(done, total int)) (*analysis.ActivationPatching, error)
	// Estimate, set instead of Keep and Run, estimates every component
	// at once (attribution patching), with the metric's structure a
	// gradient needs.
	Estimate func(m *model.Model, clean, corrupt [][]int, metric analysis.PatchMetric, progress func(done, total int)) (*analysis.ActivationPatching, error)
	// How says how the figures are made, for the views: "one component a
	// run", or an estimate's words.
	How string
}

// PatchKinds are the kinds -patch runs: each of analysis.StreamKinds by
// layer and position, each of analysis.HeadKinds by head over every
// position ("z") and at each ("z-by-pos"), then attribution patching's
// estimates of z and of the stream kinds ("attribution-z").
var PatchKinds = append(activationPatchKinds(), attributionPatchKinds()...)

// activationPatchKinds are analysis' activation patching's kinds.
func activationPatchKinds() []PatchKind {
	var kinds []PatchKind
	keep := func(kind string) func(model.Config) []string {
		return func(cfg model.Config) []string { return analysis.PatchNames(cfg, kind) }
	}
	for _, kind := range analysis.StreamKinds {
		kinds = append(kinds, PatchKind{Name: kind, Activation: anyBlock(kind), Axes: []string{"layer", "pos"}, Keep: keep(kind), How: oneARun,
			Work: func(cfg model.Config, hs ablation.Heads, t int) (analysis.Work, error) {
				return analysis.ActivationPatchWork(cfg, kind, false, hs, 1, t)
			},
			Run: func(c *analysis.Cache, corrupt [][]int, metric analysis.Metric, hs ablation.Heads, progress func(int, int)) (*analysis.ActivationPatching, error) {
				return analysis.PatchStream(c, corrupt, kind, metric, hs, progress)
			}})
	}
	for _, byPos := range []bool{false, true} {
		for _, kind := range analysis.HeadKinds {
			k := PatchKind{Name: kind, Activation: anyBlock(kind), Axes: []string{"layer", "head"}, Keep: keep(kind), How: oneARun,
				Work: func(cfg model.Config, hs ablation.Heads, t int) (analysis.Work, error) {
					return analysis.ActivationPatchWork(cfg, kind, byPos, hs, 1, t)
				},
				Run: func(c *analysis.Cache, corrupt [][]int, metric analysis.Metric, hs ablation.Heads, progress func(int, int)) (*analysis.ActivationPatching, error) {
					return analysis.PatchHeads(c, corrupt, kind, byPos, metric, hs, progress)
				}}
			if byPos {
				k.Name, k.Axes = kind+"-by-pos", append(k.Axes, "pos")
			}
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// anyBlock is TransformerLens's name of kind's activation in block N.
func anyBlock(kind string) string {
	return strings.Replace(analysis.PatchName(kind, 0), "blocks.0.", "blocks.N.", 1)
}

// PatchKindNames are the names -patch takes, in PatchKinds' order.
func PatchKindNames() []string {
	names := make([]string, len(PatchKinds))
	for i, k := range PatchKinds {
		names[i] = k.Name
	}
	return names
}

// patchKind is the kind called name, nil when there is none.
func patchKind(name string) *PatchKind {
	i := slices.IndexFunc(PatchKinds, func(k PatchKind) bool { return k.Name == name })
	if i < 0 {
		return nil
	}
	return &PatchKinds[i]
}

// Patching is -patch's result as -json prints it (under "patching"): the
// metric of the corrupted input with each component patched from the
// clean one, by the axes Axes names, Values[i][j]... for layer Layers[i],
// head Heads[j] (the heads' axis: kv heads for k and v with fewer) and
// position, null where not patched.
type Patching struct {
	Kind          string          `json:"kind"`
	How           string          `json:"how"` // PatchKind.How
	Metric        string          `json:"metric"`
	Answer        *Token          `json:"answer,omitempty"` // logit difference's tokens
	Wrong         *Token          `json:"wrong,omitempty"`
	Clean         float64         `json:"clean"`     // the metric on the clean input
	Corrupted     float64         `json:"corrupted"` // and on the corrupted one, unpatched
	CorruptTokens []int           `json:"corrupt_tokens"`
	CorruptLabels []string        `json:"corrupt_labels"`
	Axes          []string        `json:"axes"`
	Layers        []int           `json:"layers"`
	Heads         []int           `json:"heads,omitempty"`
	Values        any             `json:"values"`
	values        analysis.Tensor // as the analysis gave them, every layer and head
}

// Token is a token the user named: its id and its label as the views show
// it.
type Token struct {
	ID    int    `json:"id"`
	Label string `json:"label"`
}

// patchInputs are -patch's inputs read in the model's tokenizer: the
// corrupted sequence, of the clean one's length, and the metric's tokens.
func patchInputs(s Subject, o Options, clean []int) (corrupt []int, answer, wrong *Token, err error) {
	p := o.Patch
	if corrupt, err = givenTokens(s, o.Checkpoint, p.CorruptTokens, p.CorruptText, "-corrupt-tokens", "-corrupt-text"); err != nil {
		return nil, nil, nil, err
	}
	if len(corrupt) != len(clean) {
		return nil, nil, nil, errors.Errorf("-patch: the corrupted input is %s and the clean one %s; give them the same length", msg.Count(len(corrupt), "token"), msg.Count(len(clean), "token"))
	}
	if p.metric() != MetricLogitDiff {
		return corrupt, nil, nil, nil
	}
	if answer, err = oneToken(s, o, "-answer", p.Answer); err != nil {
		return nil, nil, nil, err
	}
	wrong, err = oneToken(s, o, "-wrong", p.Wrong)
	return corrupt, answer, wrong, err
}

// oneToken is v, read as text in the model's tokenizer (as ids or names
// without one), refused unless it is exactly one token.
func oneToken(s Subject, o Options, flagName, v string) (*Token, error) {
	var ids []int
	var err error
	if s.Tokenizer != nil {
		ids, err = s.Tokenizer.Encode(v)
	} else {
		ids, err = givenTokens(s, o.Checkpoint, v, "", flagName, flagName)
	}
	if err != nil {
		return nil, errors.Wrap(err, flagName)
	}
	if len(ids) != 1 {
		return nil, errors.Errorf("%s %s is %s; logit difference compares two single tokens", flagName, msg.Quote(v), msg.Count(len(ids), "token"))
	}
	return &Token{ID: ids[0]}, nil
}

// patchWork is -patch's forwards on the sequence of t tokens, for the
// per-head estimate.
func (r *Report) patchWork(t int) (analysis.Work, error) {
	w, err := patchKind(r.Options.Patch.Kind).Work(r.Config, r.perHead(), t)
	return w, errors.Wrapf(err, "-patch %s", r.Options.Patch.Kind)
}

// run is Run on a clean run that kept what the kind patches.
func (k PatchKind) run(m *model.Model, clean, corrupt [][]int, metric analysis.PatchMetric, hs ablation.Heads, progress func(done, total int)) (*analysis.ActivationPatching, error) {
	c, err := analysis.RunTokensWithCache(m, clean, k.Keep(m.Config)...)
	if err != nil {
		return nil, err
	}
	return k.Run(c, corrupt, metric.Metric(clean), hs, progress)
}

// patch runs -patch on the sequence shown (clean) and the corrupted one,
// a phase of Options.Progress counting the patched runs.
func (r *Report) patch(m *model.Model) error {
	p, kind := r.Options.Patch, patchKind(r.Options.Patch.Kind)
	clean, corrupt := [][]int{r.Sequence.Tokens}, [][]int{r.Patching.CorruptTokens}
	metric := analysis.PatchMetric{Loss: true, Text: clean} // the clean text's loss, on every run
	if r.Patching.Metric == MetricLogitDiff {
		metric = analysis.LogitDiff(r.Patching.Answer.ID, r.Patching.Wrong.ID)
	}
	progress := r.counter("patching "+p.Kind, "runs")
	var got *analysis.ActivationPatching
	var err error
	if kind.Estimate != nil {
		got, err = kind.Estimate(m, clean, corrupt, metric, progress)
	} else {
		got, err = kind.run(m, clean, corrupt, metric, r.perHead(), progress)
	}
	if err != nil {
		return errors.Wrapf(err, "-patch %s", p.Kind)
	}
	r.Patching.Clean, r.Patching.Corrupted, r.Patching.values = got.Clean, got.Corrupted, got.Values
	return nil
}

// preparePatch reads -patch's inputs before anything runs (tokens is
// the clean sequence the user gave) into r.Patching.
func (r *Report) preparePatch(s Subject, tokens []int) error {
	o := r.Options
	if o.Patch.Kind == "" {
		return nil
	}
	if tokens == nil {
		return errors.New("-patch needs the clean input: give it with -text or -tokens")
	}
	corrupt, answer, wrong, err := patchInputs(s, o, tokens)
	if err != nil {
		return err
	}
	for _, t := range []*Token{answer, wrong} {
		if t != nil {
			t.Label = labels(s.Task, []int{t.ID})[0]
		}
	}
	r.Patching = &Patching{Kind: o.Patch.Kind, How: patchKind(o.Patch.Kind).How, Metric: o.Patch.metric(), Answer: answer, Wrong: wrong,
		CorruptTokens: corrupt, CorruptLabels: labels(s.Task, corrupt), Axes: patchKind(o.Patch.Kind).Axes}
	return nil
}

// selectPatching is p with its layers and heads cut to sel (the heads'
// axis to those it has), every value not patched null.
func selectPatching(p *Patching, sel Selection) *Patching {
	if p == nil || p.values.Len() == 0 {
		return p
	}
	out := *p
	out.Layers, out.Heads = sel.Layers, nil
	shape := p.values.Shape
	cells := func(from, n int) []*float64 {
		row := make([]*float64, n)
		for i := range row {
			if v := p.values.At(from + i); !math.IsNaN(v) {
				row[i] = &v
			}
		}
		return row
	}
	if p.Axes[1] == "head" {
		out.Heads = []int{}
		for _, h := range sel.Heads {
			if h < shape[1] {
				out.Heads = append(out.Heads, h)
			}
		}
	}
	rows := make([]any, len(sel.Layers))
	for i, l := range sel.Layers {
		if out.Heads == nil {
			rows[i] = cells(l*shape[1], shape[1])
			continue
		}
		row := make([]any, len(out.Heads))
		for j, h := range out.Heads {
			if at := l*shape[1] + h; len(shape) == 3 {
				row[j] = cells(at*shape[2], shape[2])
			} else {
				row[j] = cells(at, 1)[0]
			}
		}
		rows[i] = row
	}
	out.Values = rows
	return &out
}

// patchingView is -patch's view of the heads Options.Layers and Heads
// pick: rows of layers (or of a layer's heads, by position), columns of
// positions or heads; nil without -patch.
func (r *Report) patchingView() *render.ActivationPatching {
	p := r.Patching
	if p == nil {
		return nil
	}
	kind := patchKind(p.Kind)
	v := &render.ActivationPatching{Kind: p.Kind, Activation: kind.Activation, How: p.How, Metric: p.metricWords(), Clean: p.Clean, Corrupted: p.Corrupted}
	sel := selectPatching(p, r.picked())
	shape := p.values.Shape
	positions := func() {
		v.ColAxis, v.ColNotes = "positions", labels(r.Task, r.Sequence.Tokens)
		for t := range shape[len(shape)-1] {
			v.Cols = append(v.Cols, strconv.Itoa(t))
		}
	}
	at := func(i int) float64 { return p.values.At(i) }
	switch {
	case len(shape) == 2 && p.Axes[1] == "pos":
		v.RowAxis = "layers"
		positions()
		for _, l := range sel.Layers {
			v.Rows, v.Values = append(v.Rows, fmt.Sprintf("L%d", l)), append(v.Values, p.values.Block(l))
		}
	case len(shape) == 2:
		v.RowAxis, v.ColAxis = "layers", "heads"
		for _, h := range sel.Heads {
			v.Cols = append(v.Cols, fmt.Sprintf("H%d", h))
		}
		for _, l := range sel.Layers {
			row := make([]float64, len(sel.Heads))
			for j, h := range sel.Heads {
				row[j] = at(l*shape[1] + h)
			}
			v.Rows, v.Values = append(v.Rows, fmt.Sprintf("L%d", l)), append(v.Values, row)
		}
	default:
		v.RowAxis = "heads"
		positions()
		for _, l := range sel.Layers {
			for _, h := range sel.Heads {
				v.Rows, v.Values = append(v.Rows, fmt.Sprintf("L%d H%d", l, h)), append(v.Values, p.values.Block(l, h))
			}
		}
	}
	return v
}

// metricWords says what the metric is, for the views.
func (p *Patching) metricWords() string {
	if p.Metric == MetricLoss {
		return "the clean text's next-token loss (nats)"
	}
	return fmt.Sprintf("logit difference %s minus %s after the last position", msg.Quote(p.Answer.Label), msg.Quote(p.Wrong.Label))
}

// Image is the PNG view: the heads' grid, the circuit tables and the
// patching table stacked under it.
func (r *Report) Image() (image.Image, error) {
	img, err := render.InspectImage(r.Figure(), r.CircuitsView())
	if err != nil || r.Patching == nil {
		return img, err
	}
	table, err := render.PatchingImage(*r.patchingView())
	if err != nil {
		return nil, err
	}
	return render.Stack(img, table), nil
}
