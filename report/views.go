package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
)

// selected lists the layers and heads Options.Layers and Heads pick, the
// default Layers resolved (auto).
func (r *Report) selected() (layers, hs []int) {
	layers = r.Options.Layers.of(r.Config.Layers)
	if r.auto() {
		layers = []int{0}
	}
	return layers, r.Options.Heads.of(r.Config.Heads)
}

// auto reports whether the views show the default of a model of more
// than MaxHeadsShown heads: the strongest heads, or layer 0 in the PNG.
func (r *Report) auto() bool {
	return r.Options.Layers.isDefault() && r.Config.Layers*r.Config.Heads > MaxHeadsShown
}

// Text is the terminal view of the selected heads; summary stops it after
// the heads' table (and the circuits).
func (r *Report) Text(summary bool) render.Inspect {
	o := r.Options
	v := render.Inspect{
		Checkpoint: o.Checkpoint, Step: r.Step, Model: r.model(), Task: r.Task.Name(), Samples: o.Samples, Seed: o.Seed,
		RolesOnSequence: r.RolesOnSequence, RolesOnGiven: r.RolesOnGiven, RolesEveryRow: o.AllRows || data.RolesOnEveryRow(r.Task) || r.RolesOnGiven,
		Source: r.Source, Tokenizer: r.Tokenizer, TaskNote: r.TaskNote,
		Circuits: r.CircuitsView(), Ablation: r.ablationView(), Patching: r.patchingView(), Summary: summary, Length: o.Length, Sequence: r.sequenceView(), Mean: o.Mean,
	}
	layers, hs := r.selected()
	if r.auto() {
		// The table lists every head; the heatmaps show the strongest.
		layers = r.Options.Layers.of(r.Config.Layers)
		shown := r.strongest(layers, hs)
		var panels []render.Panel
		for _, lh := range shown {
			panels = append(panels, r.Panel(lh[0], lh[1], textNotes(r.Pooled.Roles[lh[0]][lh[1]])))
		}
		v.Layers = [][]render.Panel{panels}
		v.LayerNote = fmt.Sprintf("heatmaps of the %s of highest role score of %d: -layer N -head H draws another, -layer N a whole layer; -html FILE shows every head on one page",
			msg.Count(len(shown), "head"), len(layers)*len(hs))
	} else {
		for _, l := range layers {
			var panels []render.Panel
			for _, h := range hs {
				panels = append(panels, r.Panel(l, h, textNotes(r.Pooled.Roles[l][h])))
			}
			v.Layers = append(v.Layers, panels)
		}
	}
	for _, l := range layers {
		for _, h := range hs {
			res := r.Pooled.Roles[l][h]
			v.Heads = append(v.Heads, render.HeadLine{Layer: l, Head: h, Role: res.Name(), Code: res.Code(), Score: res.Score, Entropy: res.Entropy})
		}
	}
	return v
}

// StrongestShown is how many heads the text view draws by default on a
// model of more than MaxHeadsShown heads: those of highest role score.
const StrongestShown = 4

// strongest are the StrongestShown heads (layer, head) of layers and hs of
// highest role score, highest first; ties keep the layers' and heads'
// order.
func (r *Report) strongest(layers, hs []int) [][2]int {
	var all [][2]int
	for _, l := range layers {
		for _, h := range hs {
			all = append(all, [2]int{l, h})
		}
	}
	score := func(lh [2]int) float64 { return r.Pooled.Roles[lh[0]][lh[1]].Score }
	slices.SortStableFunc(all, func(a, b [2]int) int { return cmp.Compare(score(b), score(a)) })
	return all[:min(StrongestShown, len(all))]
}

func (r *Report) model() render.Model {
	c := r.Config
	return render.Model{Layers: c.Layers, Heads: c.Heads, DModel: c.DModel, MLP: c.MLP, Blocks: c.Blocks(), Family: c.Family(), KVHeads: c.KVHeads,
		LayerKinds: layerKinds(c, every(c.Layers, c.Heads).Layers)}
}

// kvHeads is the key-value head each query head reads, nil when every
// query head has its own (model.Config.KVHeads unset or equal to Heads).
func (r *Report) kvHeads() []int {
	m := r.model()
	if !m.Grouped() {
		return nil
	}
	kv := make([]int, m.Heads)
	for h := range kv {
		kv[h] = m.KVHead(h)
	}
	return kv
}

// sequenceView is the sequence shown and the predictions on it.
func (r *Report) sequenceView() render.Sequence {
	s, n := r.Sequence, len(r.Sequence.Tokens)
	v := render.Sequence{
		Labels: labels(r.Task, s.Tokens), Targets: make([]string, n), Predicted: labels(r.Task, r.Forward.Predictions),
		Scored: make([]bool, n), Correct: make([]bool, n), Drawn: s.Drawn, TaskScored: make([]bool, len(s.TaskScored)),
		Misplaced: s.MisplacedSep, TaskSep: s.TaskSep, From: tokensFlag(r.Options), EveryPosition: r.RolesOnGiven,
	}
	for i := range n {
		v.Scored[i], v.Correct[i] = s.Scored[i] != 0, r.Forward.Predictions[i] == s.Targets[i]
		if v.Scored[i] {
			v.Targets[i] = r.Task.Label(s.Targets[i])
		}
	}
	for i, x := range s.TaskScored {
		v.TaskScored[i] = x != 0
	}
	return v
}

// textNotes are the lines under a terminal heatmap: the role, every pattern
// score (two to a line, so they fit under a small map) and the entropy.
func textNotes(res heads.Result) []string {
	s := res.Scores
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	return []string{
		"role: " + res.String(),
		fmt.Sprintf("prev %s  self %s", f(s[heads.PreviousToken]), f(s[heads.Self])),
		fmt.Sprintf("first %s  sep %s", f(s[heads.FirstToken]), f(s[heads.Separator])),
		fmt.Sprintf("off %d %s  dup %s", res.OffsetK, f(s[heads.Offset]), f(s[heads.Duplicate])),
		fmt.Sprintf("ind %s  H %s (%s)", f(s[heads.Induction]), f(res.Entropy), f(res.EntropyNorm)),
		fmt.Sprintf("min %s  next> %s", f(s[heads.SmallestRemaining]), f(s[heads.NextLarger])),
	}
}

// Panel is head (l, h) on the sequence shown, or with Options.Mean its
// mean over the examples, labelled by position (SEP where every example
// has it), with notes under it.
func (r *Report) Panel(l, h int, notes []string) render.Panel {
	labels, weights := labels(r.Task, r.Sequence.Tokens), r.Forward.Map(l, h)
	if r.Options.Mean {
		weights, labels = r.Pooled.Mean.Matrix(l, h), make([]string, len(r.Pooled.Sep))
		for i, sep := range r.Pooled.Sep {
			labels[i] = strconv.Itoa(i)
			if sep {
				labels[i] = "SEP"
			}
		}
	}
	return render.Panel{
		Title:   fmt.Sprintf("layer %d head %d%s", l, h, layerKind(r.Config, l)),
		Weights: weights,
		Rows:    labels,
		Cols:    labels,
		Causal:  true,
		Window:  r.Config.LayerWindow(l), // a global layer of a local/global model has none
		Notes:   notes,
	}
}

// layerKind marks the layers of a local/global model (global_layers):
// " (local)" for a windowed one, " (global)" for one that sees every
// earlier position; "" for a model whose layers are all alike.
func layerKind(c model.Config, l int) string {
	if kind := kindOf(c, l); kind != "" {
		return " (" + kind + ")"
	}
	return ""
}

// kindOf is "local" or "global" for layer l of a local/global model, ""
// for a model whose layers are all alike.
func kindOf(c model.Config, l int) string {
	switch {
	case c.GlobalLayers == "" || c.Window == 0:
		return ""
	case c.LocalLayer(l):
		return "local"
	}
	return "global"
}

// layerKinds are kindOf of each of layers, nil for a model whose layers
// are all alike (Document.LayerKinds).
func layerKinds(c model.Config, layers []int) []string {
	if kindOf(c, 0) == "" {
		return nil
	}
	out := make([]string, len(layers))
	for i, l := range layers {
		out[i] = kindOf(c, l)
	}
	return out
}

// PNGMaxWidth is the widest PNG in pixels: the heads of a layer wrap into
// rows of as many panels as fit (four of a 16-token copy model, two of a
// long sequence's, whose heatmaps render keeps within 960 px).
const PNGMaxWidth = 2400

// Figure is the selected heads as PNG panels [layer][head], each titled
// with its role and entropy and marked with the scored rows, the separator
// and the predictions, under a title naming the checkpoint, task and step.
func (r *Report) Figure() render.Figure {
	o, seq := r.Options, r.sequenceView()
	sep := analysis.Separator(r.Task)
	scored, seps, predicted, correct := seq.Scored, make([]bool, len(seq.Labels)), seq.Predicted, seq.Correct
	for i, id := range r.Sequence.Tokens {
		seps[i] = id == sep
	}
	ok, n := seq.Accuracy()
	source := fmt.Sprintf("one example of task %s drawn with seed %d; correct at scored positions: %d/%d", r.Task.Name(), o.Seed, ok, n)
	if !seq.Drawn {
		source = fmt.Sprintf("tokens from %s; correct at scored positions: %d/%d", seq.From, ok, n)
	}
	if o.Mean {
		// The mean has no one sequence: no predictions, SEP where every
		// example has it, and the scored rows the task's.
		source = fmt.Sprintf("the mean over %d examples of task %s (seed %d)", o.Samples, r.Task.Name(), o.Seed)
		scored, seps, predicted, correct = r.Pooled.Scored, r.Pooled.Sep, nil, nil
	}
	f := render.Figure{
		Title:    []string{r.naming().FigureHeading(), "heatmaps: " + source, render.FigureLegend},
		MaxWidth: PNGMaxWidth,
	}
	layers, hs := r.selected()
	for _, l := range layers {
		var row []render.Panel
		for _, h := range hs {
			res := r.Pooled.Roles[l][h]
			p := r.Panel(l, h, []string{fmt.Sprintf("%s, H %.2f", res.String(), res.Entropy)})
			p.Scored, p.Separator, p.Predicted, p.Correct = scored, seps, predicted, correct
			row = append(row, p)
		}
		f.Grid = append(f.Grid, row)
	}
	return f
}

// raisedHeads is how many heads the view names the top tokens of.
const raisedHeads = 5

// raises are the top tokens of the raisedHeads heads adding most to the
// correct logit, those first.
func (r *Report) raises(d *analysis.Attribution) []render.HeadTokens {
	var all []render.HeadTokens
	for l, layer := range d.TopTokens {
		for h, ids := range layer {
			all = append(all, render.HeadTokens{Layer: l, Head: h, Tokens: labels(r.Task, ids)})
		}
	}
	slices.SortStableFunc(all, func(a, b render.HeadTokens) int {
		return cmp.Compare(d.Heads[b.Layer][b.Head], d.Heads[a.Layer][a.Head])
	})
	return all[:min(raisedHeads, len(all))]
}

// CircuitsView is the circuit metrics of the heads Options.Layers and
// Heads pick (every head by default) as render shows them; nil without
// Options.Circuits.
func (r *Report) CircuitsView() *render.Circuits {
	c := r.Circuits
	if c == nil {
		return nil
	}
	v := &render.Circuits{Layers: r.Config.Layers, Heads: r.Config.Heads}
	sel := r.picked()
	for _, cp := range c.Copying {
		if !sel.holds(cp.Layer, cp.Head) {
			continue
		}
		h := render.CircuitHead{Layer: cp.Layer, Head: cp.Head, Prefix: c.PrefixMatching[cp.Layer][cp.Head], Copying: cp.Score, Diagonal: math.NaN()}
		if cp.Diagonal != nil {
			h.Diagonal = *cp.Diagonal
			v.DiagonalSample = cp.DiagonalSample
		}
		if c.DirectLogit != nil {
			h.Logit = c.DirectLogit.Heads[cp.Layer][cp.Head]
		}
		if c.Patching != nil && c.Patching.Undefined == "" {
			h.Patched = c.Patching.Restored[cp.Layer][cp.Head]
		}
		v.PerHead = append(v.PerHead, h)
	}
	if d := c.DirectLogit; d != nil {
		v.DirectLogit = &render.DirectLogit{Positions: d.Positions, Logit: d.Logit, Embeddings: d.Embeddings, Biases: d.Biases, MLPs: d.MLPs, Raises: r.raises(d),
			Readout: d.Readout}
	}
	if p := c.Patching; p != nil {
		v.Patching = &render.Patching{CleanLogit: p.CleanLogit, CorruptedLogit: p.CorruptedLogit, Examples: p.Examples, Undefined: p.Undefined}
	}
	if icl := c.ICL; icl != nil {
		v.ICL = &render.ICL{Pairs: icl.Pairs, Late: icl.Late, Early: icl.Early, Score: icl.Score, InductionHeads: r.inductionHeads()}
	}
	for _, l := range c.LogitLens {
		v.Lens = append(v.Lens, render.LensDepth{Depth: l.Depth, Accuracy: l.Accuracy, LogProb: l.LogProb, Correct: l.Correct})
	}
	v.LensReadout = c.LogitLensReadout
	for _, x := range selectCircuits(c, sel).Composition {
		v.Composition = append(v.Composition, render.Composition{From: x.From, To: x.To, Q: x.Q, K: x.K, V: x.V})
	}
	return v
}

// inductionHeads counts the model's heads whose role is induction.
func (r *Report) inductionHeads() int {
	n := 0
	for _, layer := range r.Pooled.Roles {
		for _, res := range layer {
			if res.Role == heads.Induction {
				n++
			}
		}
	}
	return n
}

// naming is what the views name the model by (render.Inspect's Heading,
// Title and FigureHeading).
func (r *Report) naming() render.Inspect {
	return render.Inspect{Checkpoint: r.Options.Checkpoint, Step: r.Step, Model: r.model(), Task: r.Task.Name(), Source: r.Source, Tokenizer: r.Tokenizer}
}

// replacements say what a removed head's output becomes, by mode.
var replacements = map[ablation.Mode]string{ablation.Zero: "zeros", ablation.Mean: "its mean over them"}

// ablationView is the ablation table as render shows it; nil without
// Options.Ablate.
func (r *Report) ablationView() *render.Ablation {
	a := r.Ablation
	if a == nil {
		return nil
	}
	v := &render.Ablation{Mode: string(a.Mode), Replacement: replacements[a.Mode], On: r.ablatedOn(a.Examples),
		Loss: a.Intact.Loss, TokenAcc: a.Intact.TokenAcc, ExactMatch: a.Intact.ExactMatch,
		NoExactMatch: data.IsText(r.Task) || !r.runExamples}
	for _, row := range a.Rows {
		v.Rows = append(v.Rows, render.AblationRow{Layer: row.Layer, Head: row.Head, Role: row.Role, Loss: row.Loss,
			DeltaLoss: row.DeltaLoss, DeltaTokenAcc: row.DeltaTokenAcc, DeltaExactMatch: row.DeltaExactMatch})
	}
	return v
}

// ablatedOn says what the n examples the heads were removed on are: the
// run's held-out set, or for a model trained elsewhere (which has no run)
// sequences of its task or the sequence the user gave.
func (r *Report) ablatedOn(n int) string {
	switch {
	case r.runExamples:
		return fmt.Sprintf("the %s of the run", msg.Count(n, "held-out example"))
	case r.RolesOnGiven:
		return fmt.Sprintf("the sequence given with %s (%s)", tokensFlag(r.Options), msg.Count(len(r.Sequence.Tokens), "token"))
	}
	return fmt.Sprintf("%s of %s", msg.Count(n, r.Task.Name()+" sequence"), msg.Count(r.Task.SeqLen(), "token"))
}
