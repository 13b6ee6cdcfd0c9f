package report

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/runlog"
)

// Runs are training runs as inspect -run shows them: one run's loss and
// accuracy curves, each head's strongest role through training and the
// circuits' curves; or several runs' curves on one step axis, each run
// tagged a, b, ...
type Runs struct {
	Logs []*runlog.Logs
	// units are what each run's loss is per when it is a language model's
	// (languageUnit), in the order of Logs.
	units []string
}

// unit is the i-th run's languageUnit.
func (r *Runs) unit(i int) string {
	if i < len(r.units) {
		return r.units[i]
	}
	return ""
}

// RunInputs are the files the views of the runs in dirs read, which no
// output may replace.
func RunInputs(dirs []string) []string {
	if len(dirs) == 1 {
		return []string{filepath.Join(dirs[0], runlog.MetricsFile), filepath.Join(dirs[0], runlog.RolesFile), filepath.Join(dirs[0], runlog.CircuitsFile)}
	}
	var inputs []string
	for _, dir := range dirs {
		inputs = append(inputs, filepath.Join(dir, runlog.MetricsFile), filepath.Join(dir, runlog.RolesFile))
	}
	return inputs
}

// ReadRuns reads the logs of each run directory, refusing a file given as
// one and a run that has logged nothing yet.
func ReadRuns(dirs []string) (*Runs, error) {
	runs := &Runs{}
	for _, dir := range dirs {
		if err := CheckRunPath(dir); err != nil {
			return nil, err
		}
		r, err := runlog.ReadLogs(dir)
		if err != nil {
			return nil, err
		}
		if len(r.Train) == 0 && len(r.Eval) == 0 {
			return nil, errors.Errorf("%s: no training or evaluation lines yet", filepath.Join(dir, runlog.MetricsFile))
		}
		runs.Logs = append(runs.Logs, r)
		runs.units = append(runs.units, languageUnit(dir))
	}
	return runs, nil
}

// JSON is the -json document: one run's runlog.Logs, or the array of them.
func (r *Runs) JSON() any {
	if len(r.Logs) == 1 {
		return r.Logs[0]
	}
	return r.Logs
}

// Chart is a stack of line charts sharing one step axis (render.Chart).
type Chart struct {
	Title  []string
	X0, X1 float64
	Panels []render.ChartPanel
}

// Chart is the -png view: one run's curves, head roles and circuits, or
// the held-out curves of several runs, one line per run.
func (r *Runs) Chart() Chart {
	x0, x1 := r.steps()
	if len(r.Logs) == 1 {
		return Chart{Title: runTitle(r.Logs[0]), X0: x0, X1: x1, Panels: runPanels(r.Logs[0], r.unit(0))}
	}
	return Chart{Title: r.compareTitle(), X0: x0, X1: x1, Panels: r.comparePanels()}
}

// steps is the step axis every run fits on: from the first step logged
// to the last.
func (r *Runs) steps() (x0, x1 float64) {
	x0, x1 = math.Inf(1), math.Inf(-1)
	for _, l := range r.Logs {
		x0, x1 = math.Min(x0, firstStep(l)), math.Max(x1, lastStep(l))
	}
	return x0, x1
}

// tag names the i-th run when several are compared: a, b, ...
func tag(i int) string { return string(rune('a' + i%26)) }

func firstStep(r *runlog.Logs) float64 {
	first := math.Inf(1)
	if len(r.Train) > 0 {
		first = float64(r.Train[0].Step)
	}
	if len(r.Eval) > 0 {
		first = math.Min(first, float64(r.Eval[0].Step))
	}
	return first
}

func lastStep(r *runlog.Logs) float64 {
	last := math.Inf(-1)
	if len(r.Train) > 0 {
		last = float64(r.Train[len(r.Train)-1].Step)
	}
	if len(r.Eval) > 0 {
		last = math.Max(last, float64(r.Eval[len(r.Eval)-1].Step))
	}
	// A run of one logged step still gets an axis, even at steps so large
	// that first+1 rounds back to first.
	first := firstStep(r)
	return math.Max(last, math.Max(first+1, math.Nextafter(first, math.Inf(1))))
}

// headName names a head and its role, as in "L1 H3 induction"; a head whose
// strongest pattern ends under the role threshold is "diffuse", as every
// other view names it.
func headName(h runlog.HeadHistory) string {
	if diffuse(h) {
		return fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, heads.Diffuse)
	}
	return fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, h.Role)
}

// diffuse reports whether the head's last score is under the role threshold.
func diffuse(h runlog.HeadHistory) bool {
	return h.Scores[len(h.Scores)-1] < heads.DefaultThreshold
}

// headScore is the head's last score, with its strongest pattern when the
// head is diffuse: "0.91", or "diffuse (best: offset 0.03)".
func headScore(h runlog.HeadHistory) string {
	last := h.Scores[len(h.Scores)-1]
	if diffuse(h) {
		return heads.Below(string(h.Role), last)
	}
	return fmt.Sprintf("%.2f", last)
}

// formed says when a head's role first passed runlog.FormedAt.
func formed(h runlog.HeadHistory) string {
	if h.Formed == nil {
		return fmt.Sprintf("never above %.1f", runlog.FormedAt)
	}
	return fmt.Sprintf("formed at step %d", *h.Formed)
}

// headSteps are a head's evaluation steps as x values.
func headSteps(h runlog.HeadHistory) []float64 {
	xs := make([]float64, len(h.Steps))
	for i, s := range h.Steps {
		xs[i] = float64(s)
	}
	return xs
}

// headRows are each head's score of its strongest role through training,
// labelled by prefix and its name.
func headRows(r *runlog.Logs, prefix string) []render.SparkRow {
	var rows []render.SparkRow
	for _, layer := range r.Heads {
		for _, h := range layer {
			rows = append(rows, render.SparkRow{Label: prefix + headName(h), X: headSteps(h), Y: h.Scores, Lo: 0, Hi: 1, Note: headScore(h) + " " + formed(h)})
		}
	}
	return rows
}

// circuitSeries are circuits.jsonl's curves: each head's prefix-matching
// score (0 to 1) and the ICL score (its lowest value to 0); nil without the
// file.
func circuitSeries(r *runlog.Logs) (prefix []curve, icl *curve) {
	if len(r.Circuits) == 0 {
		return nil, nil
	}
	first := r.Circuits[0]
	for l, layer := range first.PrefixMatching {
		for h := range layer {
			c := curve{name: fmt.Sprintf("L%d H%d", l, h), hi: 1}
			for _, rec := range r.Circuits {
				c.xs, c.ys = append(c.xs, float64(rec.Step)), append(c.ys, rec.PrefixMatching[l][h])
			}
			prefix = append(prefix, c)
		}
	}
	if first.ICL != nil {
		icl = &curve{name: "ICL score"}
		for _, rec := range r.Circuits {
			icl.xs, icl.ys = append(icl.xs, float64(rec.Step)), append(icl.ys, *rec.ICL)
			icl.lo = math.Min(icl.lo, *rec.ICL)
		}
		if icl.lo == 0 {
			icl.lo = -1
		}
	}
	return prefix, icl
}

// runTitle names the run, its steps and its evaluations.
func runTitle(r *runlog.Logs) []string {
	return []string{fmt.Sprintf("run %s: steps %d-%d, %s", r.Dir, int(firstStep(r)), int(lastStep(r)), msg.Count(len(r.Eval), "evaluation"))}
}

// compareTitle names each run with its tag, steps and evaluations.
func (r *Runs) compareTitle() []string {
	var title []string
	for i, l := range r.Logs {
		title = append(title, fmt.Sprintf("%s: %s", tag(i), runTitle(l)[0]))
	}
	return title
}

// Text is the terminal view: sparklines sharing one step axis.
func (r *Runs) Text() render.Sparks {
	x0, x1 := r.steps()
	if len(r.Logs) == 1 {
		return render.Sparks{Title: runTitle(r.Logs[0]), X0: x0, X1: x1, Sections: runSections(r.Logs[0], r.unit(0))}
	}
	return render.Sparks{Title: r.compareTitle(), X0: x0, X1: x1, Sections: r.compareSections()}
}

// runSections are one run's curves, those at other lengths, its heads'
// roles and its circuits.
func runSections(r *runlog.Logs, unit string) []render.SparkSection {
	curves := render.SparkSection{Rows: sparkRows(runCurves(r, unit), "")}
	roles := render.SparkSection{Heading: []string{fmt.Sprintf("no %s: the run has no head roles (evaluation off, or written before they were recorded)", runlog.RolesFile)}}
	if r.Heads != nil {
		roles = render.SparkSection{Heading: []string{
			"heads: strongest role at the last evaluation, its score (0-1) at each evaluation,",
			fmt.Sprintf("  on the run's first %d held-out rows (%s; inspect's heatmaps score -examples of the task)", runlog.RoleRows, runlog.RolesFile),
		}, Rows: headRows(r, "")}
	}
	sections := []render.SparkSection{curves}
	if lengths := lengthCurves(r, unit); lengths != nil {
		sections = append(sections, render.SparkSection{Heading: []string{lengthsHeading}, Rows: sparkRows(lengths, "")})
	}
	sections = append(sections, roles)
	prefix, icl := circuitSeries(r)
	if prefix == nil && icl == nil {
		return sections
	}
	circuits := render.SparkSection{Heading: []string{
		fmt.Sprintf("circuits (%s): each head's prefix-matching score (0-1) on %d sequences of", runlog.CircuitsFile, runlog.RoleRows),
		"  random tokens repeated twice",
	}}
	if icl != nil {
		circuits.Heading[1] += ", and the ICL score (the copy's loss minus the same"
		circuits.Heading = append(circuits.Heading, "  predictions' at the block's first occurrence, nats)")
	}
	for _, c := range prefix {
		circuits.Rows = append(circuits.Rows, render.SparkRow{Label: c.name + " prefix", X: c.xs, Y: c.ys, Lo: 0, Hi: 1})
	}
	if icl != nil {
		circuits.Rows = append(circuits.Rows, render.SparkRow{Label: icl.name, Scale: true, X: icl.xs, Y: icl.ys, Lo: icl.lo, Hi: 0})
	}
	return append(sections, circuits)
}

// compareSections are, for each curve, one sparkline per run on a shared
// scale, then those at other lengths, then each run's heads.
func (r *Runs) compareSections() []render.SparkSection {
	var first, lengths render.SparkSection
	curves, lengthsOf := make([][]curve, len(r.Logs)), make([][]curve, len(r.Logs))
	for i, l := range r.Logs {
		curves[i], lengthsOf[i] = runCurves(l, r.unit(i)), lengthCurves(l, r.unit(i))
		lengths.Rows = append(lengths.Rows, sparkRows(lengthsOf[i], tag(i)+" ")...)
	}
	hi := map[string]float64{}
	var names []string
	for _, run := range curves {
		for _, c := range run {
			hi[c.name] = math.Max(hi[c.name], c.hi)
			if !slices.Contains(names, c.name) {
				names = append(names, c.name)
			}
		}
	}
	for _, name := range names {
		for i := range r.Logs {
			for _, c := range curves[i] {
				if c.name == name {
					c.hi = hi[name]
					first.Rows = append(first.Rows, sparkRows([]curve{c}, tag(i)+" ")...)
				}
			}
		}
	}
	sections := []render.SparkSection{first}
	if lengths.Rows != nil {
		lengths.Heading = []string{lengthsHeading}
		sections = append(sections, lengths)
	}
	for i, l := range r.Logs {
		if l.Heads != nil {
			sections = append(sections, render.SparkSection{
				Heading: []string{tag(i) + ": heads, strongest role at the last evaluation, its score (0-1) at each evaluation"},
				Rows:    headRows(l, tag(i)+" "),
			})
		}
	}
	return sections
}

// sparkRows are curves as sparklines, each label after prefix; the
// curves at task.length give their scale, those at other lengths share
// the heading's 0-1.
func sparkRows(curves []curve, prefix string) []render.SparkRow {
	var rows []render.SparkRow
	for _, c := range curves {
		rows = append(rows, render.SparkRow{Label: prefix + c.name, Scale: c.length == 0, X: c.xs, Y: c.ys, Lo: c.lo, Hi: c.hi})
	}
	return rows
}

// grey draws the training loss behind the held-out curves.
var grey = color.RGBA{150, 150, 150, 255}

// runPanels are one run's -png view: the losses, a language model's bits
// per unit, the accuracies, those at other lengths and, when the run has
// roles.jsonl, one line per head with a guide at runlog.FormedAt; then
// circuits.jsonl's curves.
func runPanels(r *runlog.Logs, unit string) []render.ChartPanel {
	loss := render.ChartPanel{Title: "loss"}
	bits := render.ChartPanel{Title: "held-out bits per " + unit}
	acc := render.ChartPanel{Title: "held-out accuracy", YMax: 1}
	for i, c := range runCurves(r, unit) {
		s := render.Series{Name: c.name, X: c.xs, Y: c.ys, Color: render.Palette[i%len(render.Palette)]}
		switch {
		case c.kind == bitsCurve:
			bits.Series, bits.YMax = append(bits.Series, s), c.hi
		case c.kind == accuracyCurve:
			acc.Series = append(acc.Series, s)
		case c.name == trainLossName:
			s.Color = grey
			fallthrough
		default:
			loss.Series, loss.YMax = append(loss.Series, s), c.hi
		}
	}
	if !(loss.YMax > 0) {
		loss.YMax = 1 // losses of 0 or below (a broken log) still draw, on a 0-1 scale
	}
	lengths := render.ChartPanel{Title: lengthsHeading, YMax: 1}
	for i, c := range lengthCurves(r, unit) {
		lengths.Series = append(lengths.Series, render.Series{Name: c.name, X: c.xs, Y: c.ys, Color: render.Palette[i%len(render.Palette)]})
	}
	panels := nonEmpty(loss, bits, acc, lengths)
	if r.Heads != nil {
		panels = append(panels, rolePanel(r))
	}
	prefix, icl := circuitSeries(r)
	if prefix != nil {
		p := render.ChartPanel{Title: "prefix matching of each head (circuits.jsonl)", YMax: 1}
		for i, c := range prefix {
			p.Series = append(p.Series, render.Series{Name: c.name, X: c.xs, Y: c.ys, Color: render.Palette[i%len(render.Palette)]})
		}
		panels = append(panels, p)
	}
	if icl != nil {
		panels = append(panels, render.ChartPanel{Title: "in-context learning score: late minus early loss (nats)", YMin: icl.lo, YMax: 0,
			Series: []render.Series{{Name: icl.name, X: icl.xs, Y: icl.ys, Color: render.Palette[0]}}})
	}
	return panels
}

// rolePanel is one line per head: its strongest role's score through
// training, with a guide at runlog.FormedAt.
func rolePanel(r *runlog.Logs) render.ChartPanel {
	roles := render.ChartPanel{Title: "heads: strongest role at the last evaluation, its score at each evaluation", YMax: 1, Guides: []float64{runlog.FormedAt}}
	for _, layer := range r.Heads {
		for _, h := range layer {
			name := headName(h)
			if diffuse(h) {
				name = fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, headScore(h))
			}
			c := render.Palette[len(roles.Series)%len(render.Palette)]
			roles.Series = append(roles.Series, render.Series{Name: name + ", " + formed(h), X: headSteps(h), Y: h.Scores, Color: c})
		}
	}
	return roles
}

// comparePanels are the -png view of several runs: the held-out loss and
// the held-out accuracies (at other lengths too), one line per run (named
// by its tag and curve).
func (r *Runs) comparePanels() []render.ChartPanel {
	loss := render.ChartPanel{Title: "held-out loss"}
	acc := render.ChartPanel{Title: "held-out accuracy", YMax: 1}
	n := 0
	for i, l := range r.Logs {
		for _, c := range append(runCurves(l, r.unit(i)), lengthCurves(l, r.unit(i))...) {
			s := render.Series{Name: tag(i) + " " + c.name, X: c.xs, Y: c.ys, Color: render.Palette[n%len(render.Palette)]}
			switch {
			case c.name == evalLossName:
				loss.Series, loss.YMax = append(loss.Series, s), math.Max(loss.YMax, c.hi)
			case c.kind == accuracyCurve:
				acc.Series = append(acc.Series, s)
			default:
				continue
			}
			n++
		}
	}
	return nonEmpty(loss, acc)
}

// nonEmpty are the panels that have a line.
func nonEmpty(panels ...render.ChartPanel) []render.ChartPanel {
	var out []render.ChartPanel
	for _, p := range panels {
		if len(p.Series) > 0 {
			out = append(out, p)
		}
	}
	return out
}
