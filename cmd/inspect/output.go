package main

import (
	"cmp"
	"fmt"
	"image"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/attnscope/attnscope/analysis"

	"github.com/pkg/errors"
	"golang.org/x/term"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/rundir"
)

// report is everything the outputs draw from.
type report struct {
	opts  options
	step  int // the checkpoint's
	task  data.Task
	cfg   model.Config
	dtype tensor.Dtype
	ex    sequence
	fw    analysis.Pass
	roles [][]heads.Result // [layer][head], pooled over opts.samples examples
	pool  analysis.Pooled

	params       int                 // weights in the checkpoint
	pageExamples []htmlview.Example  // held-out examples for -html
	training     *htmlview.Training  // the run's metrics for -html, or nil
	compare      []htmlview.Training // other runs whose curves -html draws beside it
	circuits     *analysis.Circuits  // with -circuits
	graph        *model.Summary      // the forward graph for -html
	ablation     *ablation.Table     // -ablate's table, or nil
}

// colorMode resolves -color: never is plain; always is colour; auto is
// colour only when stdout is a terminal and NO_COLOR is unset or empty.
// Colour is 24-bit when COLORTERM says truecolor or 24bit, else 256-colour.
func colorMode(flagValue string, stdout io.Writer) (render.Mode, error) {
	switch flagValue {
	case "never":
		return render.Plain, nil
	case "auto":
		if os.Getenv("NO_COLOR") != "" || !isTerminal(stdout) {
			return render.Plain, nil
		}
	case "always":
	default:
		return render.Plain, errors.Errorf("-color %s: want auto, always or never", msg.Quote(flagValue))
	}
	if ct := os.Getenv("COLORTERM"); ct == "truecolor" || ct == "24bit" {
		return render.TrueColor, nil
	}
	return render.Color256, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// defaultWidth is the layout width when neither COLUMNS nor the terminal
// says otherwise (stdout redirected to a file or a pipe).
const defaultWidth = 80

// width is the terminal width for laying out heads side by side: COLUMNS if
// it is a positive integer, else the terminal's size, else defaultWidth.
func width(stdout io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return defaultWidth
}

// selected lists the layers and heads -layer and -head pick.
func (r report) selected() (layers, hs []int) {
	for l := range r.cfg.Layers {
		if r.opts.layer < 0 || r.opts.layer == l {
			layers = append(layers, l)
		}
	}
	for h := range r.cfg.Heads {
		if r.opts.head < 0 || r.opts.head == h {
			hs = append(hs, h)
		}
	}
	return layers, hs
}

func (r report) labels() []string { return labels(r.task, r.ex.tokens) }

// labels names each token of a sequence.
func labels(task data.Task, tokens []int) []string {
	out := make([]string, len(tokens))
	for i, id := range tokens {
		out[i] = task.Label(id)
	}
	return out
}

// writeText prints the header, the predictions table and one row of heatmaps
// per layer with each head's role underneath.
func (r report) writeText(w io.Writer, mode render.Mode, width int) error {
	p := &printer{w: w}
	c := r.cfg
	blocks := "attention-only blocks"
	if c.MLP {
		blocks = "pre-LN blocks with MLP"
	}
	p.printf("checkpoint %s (step %d)\n", r.opts.checkpoint, r.step)
	p.printf("model: %s x %s, d_model %d, %s%s\n", count(c.Layers, "layer"), count(c.Heads, "head"), c.DModel, blocks, familySuffix(c))
	r.writeSummary(p, width)
	if r.circuits != nil {
		r.writeCircuits(p, width)
	}
	if r.opts.summary {
		return p.err
	}
	p.printf("\n")
	if r.ex.drawn {
		p.para(width, "sequence (one example of task %s drawn with seed %d):", r.task.Name(), r.opts.seed)
	} else {
		p.para(width, "sequence (from -tokens; the target of each position is the next token (none at the last), scored at the positions task %s scores: %s):",
			r.task.Name(), positions(r.ex.taskScored))
	}
	if p.err == nil {
		p.err = render.Table(w, r.predictionRows(), width)
	}
	correct, scored := r.accuracy()
	if scored > 0 {
		p.printf("correct at scored positions: %d/%d\n", correct, scored)
	} else {
		p.para(width, "no position of these %d tokens is one task %s scores (%s), so there is nothing to score",
			len(r.ex.tokens), r.task.Name(), positions(r.ex.taskScored))
	}
	if at := r.ex.misplacedSep; at >= 0 {
		p.para(width, "note: these tokens do not follow task %s, which has SEP only at position %s (this input differs at position %d); the model never saw such input, so its predictions are not what it learned",
			r.task.Name(), sepPositions(r), at)
	}
	p.printf("\n")
	rowsUsed := "at the positions the task scores"
	if r.opts.allRows || data.RolesOnEveryRow(r.task) {
		rowsUsed = "at every position"
	}
	if r.opts.mean {
		p.para(width, "heatmaps: the mean over %d examples of %s (seed %d); rows = query positions, columns = key positions, %s = masked",
			r.opts.samples, r.task.Name(), r.opts.seed, render.MaskedGlyph)
	} else {
		p.para(width, "heatmaps: the sequence above; rows = queries, columns = keys, %s = masked", render.MaskedGlyph)
	}
	p.para(width, "roles: %s, %s", r.rolesSource(), rowsUsed)
	layers, hs := r.selected()
	for _, l := range layers {
		var panels []render.Panel
		for _, h := range hs {
			panels = append(panels, r.panel(l, h, textNotes(r.roles[l][h])))
		}
		p.printf("\n")
		if p.err == nil {
			p.err = render.Terminal(w, panels, mode, width)
		}
	}
	p.printf("\n")
	p.para(width, "prev = previous-token, first = first-token, sep = separator, off k = offset k, "+
		"dup = duplicate-token, ind = induction, min = smallest-remaining (the smallest symbol before SEP not yet written after it), "+
		"next> = next-larger (earlier positions holding the smallest symbol above the query's); "+
		"scores in [0,1], 0 = no better than uniform; H = mean row entropy in nats (as a share of uniform's)")
	if r.ablation != nil {
		p.printf("\n")
		r.writeAblation(p, width)
	}
	return p.err
}

// rolesSource says what the head roles were scored on.
func (r report) rolesSource() string {
	if !data.HasWindows(r.task) {
		return "scored on the sequence shown (they pool over windows of the text when -data names it)"
	}
	return fmt.Sprintf("pooled over %d examples of %s (seed %d)", r.opts.samples, r.task.Name(), r.opts.seed)
}

// writeSummary prints one line per selected head: its role, the score and
// the mean row entropy, where the roles come from.
func (r report) writeSummary(p *printer, width int) {
	rowsUsed := "the positions the task scores"
	if r.opts.allRows || data.RolesOnEveryRow(r.task) {
		rowsUsed = "every position"
	}
	p.para(width, "heads: roles %s, at %s", r.rolesSource(), rowsUsed)
	layers, hs := r.selected()
	roleW := len("role")
	for _, l := range layers {
		for _, h := range hs {
			roleW = max(roleW, utf8.RuneCountInString(r.roles[l][h].Name()))
		}
	}
	p.printf("%5s %4s  %-*s %5s %7s\n", "layer", "head", roleW, "role", "score", "entropy")
	for _, l := range layers {
		for _, h := range hs {
			res := r.roles[l][h]
			p.printf("%5d %4d  %-*s %5.2f %7.2f\n", l, h, roleW, res.Name(), res.Score, res.Entropy)
		}
	}
}

// writeCircuits prints -circuits: each head's prefix-matching and copying
// scores, then the strongest compositions between consecutive layers.
func (r report) writeCircuits(p *printer, width int) {
	c := r.circuits
	p.para(width, "circuits: prefix matching on %d sequences of random tokens repeated twice (seed %d), copying from each head's OV circuit W_U W_O W_V W_E^T (Σλ/Σ|λ| over its eigenvalues, and the share of tokens it raises most)", r.opts.samples, r.opts.seed)
	dla := c.DirectLogit
	if dla != nil {
		through, mlps := "the LM head", ""
		if len(dla.MLPs) > 0 {
			through = "ln_f (its scale held fixed) and the LM head"
			parts := make([]string, len(dla.MLPs))
			for l, x := range dla.MLPs {
				parts[l] = fmt.Sprintf("%+.3f", x)
			}
			mlps = ", MLPs by layer " + strings.Join(parts, " ")
		}
		p.para(width, "direct logit attribution: what each head adds to the correct token's logit through %s, mean over the %d scored positions of %d examples (the parts sum to the logit, %.3f; embeddings %.3f, biases %.3f%s)",
			through, dla.Positions, r.opts.samples, dla.Logit, dla.Embeddings, dla.Biases, mlps)
	}
	if pt := c.Patching; pt != nil {
		p.para(width, "activation patching: the first copy of the block replaced, the correct token's mean logit falls from %.3f to %.3f; patched is the share of that fall patching the head from the clean run restores",
			pt.CleanLogit, pt.CorruptedLogit)
	}
	p.printf("%5s %4s  %9s %7s %9s %9s %8s\n", "layer", "head", "prefix", "copying", "diagonal", "logit", "patched")
	for _, cp := range c.Copying {
		logit, patched := "-", "-"
		if dla != nil {
			logit = fmt.Sprintf("%+.3f", dla.Heads[cp.Layer][cp.Head])
		}
		if c.Patching != nil {
			patched = fmt.Sprintf("%.3f", c.Patching.Restored[cp.Layer][cp.Head])
		}
		p.printf("%5d %4d  %9.3f %7.3f %9.3f %9s %8s\n", cp.Layer, cp.Head, c.PrefixMatching[cp.Layer][cp.Head], cp.Score, cp.Diagonal, logit, patched)
	}
	if icl := c.ICL; icl != nil {
		p.para(width, "in-context learning: the copy's %d predictions lose %.3f nats on average, the same predictions at the block's first occurrence %.3f: score %+.3f (late minus early)",
			icl.Pairs, icl.Late, icl.Early, icl.Score)
	}
	if len(c.LogitLens) > 0 {
		p.para(width, "logit lens: the residual stream read out through the LM head%s after the embeddings and after each block, at the scored positions", map[bool]string{true: " (and ln_f)", false: ""}[r.cfg.MLP])
		p.printf("%-10s %8s %9s %9s\n", "depth", "accuracy", "log p", "logit")
		for _, l := range c.LogitLens {
			name := "embed"
			if l.Depth > 0 {
				name = fmt.Sprintf("block %d", l.Depth-1)
			}
			p.printf("%-10s %8.3f %9.3f %9.3f\n", name, l.Accuracy, l.LogProb, l.Correct)
		}
	}
	if len(c.Composition) == 0 {
		return
	}
	top := slices.Clone(c.Composition)
	slices.SortStableFunc(top, func(a, b analysis.Composition) int { return cmp.Compare(b.K, a.K) })
	p.para(width, "composition (Elhage et al.): ||W_B W_A||_F / (||W_B||_F ||W_A||_F) of head A's output read by head B's queries (Q), keys (K) or values (V), the %d strongest by K", min(5, len(top)))
	p.printf("%-7s %-7s %6s %6s %6s\n", "from", "to", "Q", "K", "V")
	for _, x := range top[:min(5, len(top))] {
		p.printf("%-7s %-7s %6.3f %6.3f %6.3f\n", fmt.Sprintf("L%d H%d", x.From[0], x.From[1]), fmt.Sprintf("L%d H%d", x.To[0], x.To[1]), x.Q, x.K, x.V)
	}
}

// writeAblation prints -ablate's table: the intact scores, then one row per
// head, most important first.
func (r report) writeAblation(p *printer, width int) {
	a := r.ablation
	in := a.Intact
	p.para(width, "ablation (%s): each head's output replaced by %s on the %d held-out examples of the run; intact: loss %.4f, token acc %.4f, exact match %.4f",
		a.Mode, map[ablation.Mode]string{ablation.Zero: "zeros", ablation.Mean: "its mean over them"}[a.Mode], a.Examples, in.Loss, in.TokenAcc, in.ExactMatch)
	roleW := 24 // the role column fits the longest role
	for _, row := range a.Rows {
		roleW = max(roleW, utf8.RuneCountInString(row.Role))
	}
	p.printf("%5s %4s  %-*s %8s %9s %9s %9s\n", "layer", "head", roleW, "role", "loss", "Δloss", "Δtoken", "Δexact")
	for _, row := range a.Rows {
		p.printf("%5d %4d  %-*s %8.4f %+9.4f %+9.4f %+9.4f\n", row.Layer, row.Head, roleW, row.Role, row.Loss, row.DeltaLoss, row.DeltaTokenAcc, row.DeltaExactMatch)
	}
}

// predictionRows is the position / token / target / prediction table; a
// target and a mark only where the task scores the position.
func (r report) predictionRows() []render.Row {
	t := len(r.ex.tokens)
	rows := []render.Row{{Name: "position"}, {Name: "token"}, {Name: "target"}, {Name: "predicted"}, {Name: ""}}
	for i := range t {
		target, mark := "", ""
		if r.ex.scored[i] != 0 {
			target = r.task.Label(r.ex.targets[i])
			mark = "✗"
			if r.fw.Predictions[i] == r.ex.targets[i] {
				mark = "✓"
			}
		}
		for k, cell := range []string{strconv.Itoa(i), r.task.Label(r.ex.tokens[i]), target, r.task.Label(r.fw.Predictions[i]), mark} {
			rows[k].Cells = append(rows[k].Cells, cell)
		}
	}
	return rows
}

// positions lists the positions a mask scores, as ranges: "8-14".
func positions(mask []float64) string {
	var parts []string
	for i := 0; i < len(mask); i++ {
		if mask[i] == 0 {
			continue
		}
		j := i
		for j+1 < len(mask) && mask[j+1] != 0 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", i, j))
		} else {
			parts = append(parts, strconv.Itoa(i))
		}
		i = j
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// sepPositions lists where the task's own example has its separator.
func sepPositions(r report) string {
	ex := make([]int, len(r.ex.taskScored))
	r.task.Sample(rand.New(rand.NewPCG(r.opts.seed, exampleStream)), ex, make([]int, len(ex)), make([]float64, len(ex)))
	var at []string
	for i, id := range ex {
		if id == analysis.Separator(r.task) {
			at = append(at, strconv.Itoa(i))
		}
	}
	return strings.Join(at, ", ")
}

func (r report) accuracy() (correct, scored int) {
	for i, s := range r.ex.scored {
		if s != 0 {
			scored++
			if r.fw.Predictions[i] == r.ex.targets[i] {
				correct++
			}
		}
	}
	return correct, scored
}

// panel is head (l, h) on the displayed sequence, or with -mean its mean
// over the examples, labelled by position (SEP where every example has it).
func (r report) panel(l, h int, notes []string) render.Panel {
	labels, weights := r.labels(), r.fw.Map(l, h)
	if r.opts.mean {
		weights, labels = r.pool.Mean.Matrix(l, h), make([]string, len(r.pool.Sep))
		for i, sep := range r.pool.Sep {
			labels[i] = strconv.Itoa(i)
			if sep {
				labels[i] = "SEP"
			}
		}
	}
	return render.Panel{
		Title:   fmt.Sprintf("layer %d head %d", l, h),
		Weights: weights,
		Rows:    labels,
		Cols:    labels,
		Causal:  true,
		Window:  r.cfg.Window,
		Notes:   notes,
	}
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

// writePNG draws the selected layers x heads as one image, written by the
// output rule (rundir.WriteOutput): never over the checkpoint, a run file or
// anything but a regular file.
func (r report) writePNG(path string) error {
	grid, _, err := render.Grid(r.pngFigure())
	if err != nil {
		return err
	}
	var img image.Image = grid
	if r.circuits != nil {
		tables, err := r.circuitTables()
		if err != nil {
			return err
		}
		img = render.Stack(append([]image.Image{grid}, tables...)...)
	}
	err = rundir.WriteOutput(path, []string{r.opts.checkpoint}, func(w io.Writer) error {
		return png.Encode(w, img)
	})
	return errors.Wrap(err, "-png")
}

// circuitTables are -circuits in the PNG: each head's metrics, the
// K-composition of each pair of consecutive layers, and the logit lens.
func (r report) circuitTables() ([]image.Image, error) {
	c := r.circuits
	heads := render.ScoreTable{
		Title:   []string{"circuits: prefix matching, copying (sum of the OV circuit's eigenvalues over the sum of their sizes; diagonal share)" + map[bool]string{true: ", direct logit attribution", false: ""}[c.DirectLogit != nil] + map[bool]string{true: ", share restored by patching", false: ""}[c.Patching != nil]},
		Columns: []render.ScoreColumn{{Name: "prefix", Lo: 0, Hi: 1, Format: "%.3f"}, {Name: "copying", Lo: -1, Hi: 1, Format: "%+.3f"}, {Name: "diagonal", Lo: 0, Hi: 1, Format: "%.3f"}},
	}
	if dla := c.DirectLogit; dla != nil {
		lo, hi := 0.0, 0.0
		for _, layer := range dla.Heads {
			for _, v := range layer {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		heads.Columns = append(heads.Columns, render.ScoreColumn{Name: "logit", Lo: lo, Hi: hi, Format: "%+.2f"})
	}
	if c.Patching != nil {
		heads.Columns = append(heads.Columns, render.ScoreColumn{Name: "patched", Lo: 0, Hi: 1, Format: "%.3f"})
	}
	for _, cp := range c.Copying {
		row := []float64{c.PrefixMatching[cp.Layer][cp.Head], cp.Score, cp.Diagonal}
		if c.DirectLogit != nil {
			row = append(row, c.DirectLogit.Heads[cp.Layer][cp.Head])
		}
		if c.Patching != nil {
			row = append(row, c.Patching.Restored[cp.Layer][cp.Head])
		}
		heads.Rows = append(heads.Rows, fmt.Sprintf("L%d H%d", cp.Layer, cp.Head))
		heads.Values = append(heads.Values, row)
	}
	if icl := c.ICL; icl != nil {
		heads.Title = append(heads.Title, fmt.Sprintf("in-context learning: the copy's loss %.3f, at the block's first occurrence %.3f: score %+.3f", icl.Late, icl.Early, icl.Score))
	}
	tables := []render.ScoreTable{heads}
	for l := 0; l+1 < r.cfg.Layers; l++ {
		comp := render.ScoreTable{Title: []string{fmt.Sprintf("K-composition: layer %d's heads (rows) read by layer %d's keys (columns)", l, l+1)}}
		hi := 0.0
		for _, x := range c.Composition {
			hi = math.Max(hi, x.K)
		}
		for h := range r.cfg.Heads {
			comp.Columns = append(comp.Columns, render.ScoreColumn{Name: fmt.Sprintf("L%d H%d", l+1, h), Lo: 0, Hi: hi, Format: "%.3f"})
		}
		for from := range r.cfg.Heads {
			row := make([]float64, r.cfg.Heads)
			for _, x := range c.Composition {
				if x.From == [2]int{l, from} && x.To[0] == l+1 {
					row[x.To[1]] = x.K
				}
			}
			comp.Rows, comp.Values = append(comp.Rows, fmt.Sprintf("L%d H%d", l, from)), append(comp.Values, row)
		}
		tables = append(tables, comp)
	}
	if len(c.LogitLens) > 0 {
		lens := render.ScoreTable{Title: []string{"logit lens: the residual stream read out at each depth, scored positions"}}
		lo := 0.0
		for _, l := range c.LogitLens {
			lo = math.Min(lo, l.LogProb)
		}
		lens.Columns = []render.ScoreColumn{{Name: "accuracy", Lo: 0, Hi: 1, Format: "%.3f"}, {Name: "log p", Lo: lo, Hi: 0, Format: "%.3f"}}
		for _, l := range c.LogitLens {
			name := "embed"
			if l.Depth > 0 {
				name = fmt.Sprintf("block %d", l.Depth-1)
			}
			lens.Rows, lens.Values = append(lens.Rows, name), append(lens.Values, []float64{l.Accuracy, l.LogProb})
		}
		tables = append(tables, lens)
	}
	var out []image.Image
	for _, t := range tables {
		img, err := render.Scores(t)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// pngMaxWidth is the widest PNG in pixels: the heads of a layer wrap into
// rows of as many panels as fit (four of a 16-token copy model).
const pngMaxWidth = 2400

// pngFigure is the selected heads as PNG panels [layer][head], each titled
// with its role and entropy and marked with the scored rows, the separator
// and the predictions, under a title naming the checkpoint, task and step.
func (r report) pngFigure() render.Figure {
	layers, hs := r.selected()
	sep := analysis.Separator(r.task)
	t := len(r.ex.tokens)
	scored, seps, predicted, correct := make([]bool, t), make([]bool, t), make([]string, t), make([]bool, t)
	for i := range t {
		scored[i] = r.ex.scored[i] != 0
		seps[i] = r.ex.tokens[i] == sep
		predicted[i] = r.task.Label(r.fw.Predictions[i])
		correct[i] = r.fw.Predictions[i] == r.ex.targets[i]
	}
	ok, n := r.accuracy()
	source := fmt.Sprintf("one example of task %s drawn with seed %d; correct at scored positions: %d/%d", r.task.Name(), r.opts.seed, ok, n)
	if !r.ex.drawn {
		source = fmt.Sprintf("tokens from -tokens; correct at scored positions: %d/%d", ok, n)
	}
	if r.opts.mean {
		// The mean has no one sequence: no predictions, SEP where every
		// example has it, and the scored rows the task's.
		source = fmt.Sprintf("the mean over %d examples of task %s (seed %d)", r.opts.samples, r.task.Name(), r.opts.seed)
		scored, seps, predicted, correct = r.pool.Scored, r.pool.Sep, nil, nil
	}
	f := render.Figure{
		Title: []string{
			fmt.Sprintf("%s  task %s  step %d  (%s x %s%s)", r.opts.checkpoint, r.task.Name(), r.step, count(r.cfg.Layers, "layer"), count(r.cfg.Heads, "head"), familySuffix(r.cfg)),
			"heatmaps: " + source,
			render.FigureLegend,
		},
		MaxWidth: pngMaxWidth,
	}
	for _, l := range layers {
		var row []render.Panel
		for _, h := range hs {
			res := r.roles[l][h]
			p := r.panel(l, h, []string{fmt.Sprintf("%s, H %.2f", res.String(), res.Entropy)})
			p.Scored, p.Separator, p.Predicted, p.Correct = scored, seps, predicted, correct
			row = append(row, p)
		}
		f.Grid = append(f.Grid, row)
	}
	return f
}

// jsonReport is the -json object. Attention and logits are float32 for a
// Float32 model so they print at float32 precision.
type jsonReport struct {
	Checkpoint string   `json:"checkpoint"`
	Step       int      `json:"step"`
	Task       string   `json:"task"`
	Seed       uint64   `json:"seed"`
	Samples    int      `json:"samples"` // examples the head scores are pooled over
	Tokens     []int    `json:"tokens"`
	Labels     []string `json:"labels"`
	Targets    []*int   `json:"targets"` // null where the position is not scored
	Attention  any      `json:"attention"`
	Logits     any      `json:"logits,omitempty"`
	// Instead of Logits past maxLogitValues logits, without -all-logits.
	htmlview.CutLogits
	Predictions []int              `json:"predictions"`
	Heads       [][]heads.Result   `json:"heads"`
	Ablation    *ablation.Table    `json:"ablation,omitempty"` // with -ablate
	Circuits    *analysis.Circuits `json:"circuits,omitempty"` // with -circuits
	// Family is the attention variant (model.Config.Family), omitted for
	// learned positions and full multi-head attention.
	Family string `json:"family,omitempty"`
}

// familySuffix is ", " and the model's attention variant, or "" for the
// original design.
func familySuffix(c model.Config) string {
	if f := c.Family(); f != "" {
		return ", " + f
	}
	return ""
}

// writeJSON prints the whole model output as one JSON object. -layer and
// -head do not filter it, so indices always mean the model's own layer and
// head numbers.
func (r report) writeJSON(w io.Writer) error {
	return writeJSONLine(w, r.jsonObject())
}

// jsonObject is what -json prints (and the -html page embeds).
func (r report) jsonObject() jsonReport {
	j := jsonReport{
		Checkpoint: r.opts.checkpoint, Step: r.step, Task: r.task.Name(), Seed: r.opts.seed, Samples: r.opts.samples,
		Tokens: r.ex.tokens, Labels: r.labels(), Targets: scoredTargets(r.ex), Predictions: r.fw.Predictions, Heads: r.roles,
		Ablation: r.ablation, Family: r.cfg.Family(), Circuits: r.circuits,
	}
	j.Attention, j.Logits = numbers(r.dtype, r.fw)
	if cut := cutLogits(r.fw.Logits.Matrix(), r.opts.allLogits); cut != nil {
		j.Logits, j.CutLogits = nil, *cut
	}
	return j
}

// scoredTargets is each position's target, nil where the task does not score it.
func scoredTargets(s sequence) []*int {
	out := make([]*int, len(s.tokens))
	for i := range s.tokens {
		if s.scored[i] != 0 {
			out[i] = &s.targets[i]
		}
	}
	return out
}

func attention32(a [][][][]float64) [][][][]float32 {
	out := make([][][][]float32, len(a))
	for l, layer := range a {
		for _, head := range layer {
			out[l] = append(out[l], rows32(head))
		}
	}
	return out
}

func rows32(m [][]float64) [][]float32 {
	out := make([][]float32, len(m))
	for i, row := range m {
		out[i] = make([]float32, len(row))
		for j, v := range row {
			out[i][j] = float32(v)
		}
	}
	return out
}

// count is "1 layer" or "2 layers".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// para prints a paragraph wrapped to width columns (at most width-1
// characters a line, so no terminal wraps it), continuation lines indented
// by two spaces. It breaks after ", " and "; " where it can, so that
// "dup = duplicate-token" stays together, and between words where a clause
// is too long for a line.
func (p *printer) para(width int, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	var clauses []string
	for start, i := 0, 0; i < len(text); i++ {
		if (text[i] == ',' || text[i] == ';') && i+1 < len(text) && text[i+1] == ' ' || i == len(text)-1 {
			clauses = append(clauses, text[start:i+1])
			start = i + 2
		}
	}
	line := ""
	add := func(piece string) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(piece) > width-1 {
			p.printf("%s\n", line)
			line = " "
		}
		if line != "" {
			line += " "
		}
		line += piece
	}
	for _, c := range clauses {
		if utf8.RuneCountInString(c)+2 <= width-1 {
			add(c)
			continue
		}
		for _, word := range strings.Fields(c) {
			add(word)
		}
	}
	p.printf("%s\n", line)
}
