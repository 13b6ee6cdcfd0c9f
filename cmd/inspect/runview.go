package main

import (
	"flag"
	"fmt"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnscope/attnscope/heads"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/render"
	"github.com/attnscope/attnscope/rundir"
)

// runViewFlags are the flags inspect -run DIR takes without -checkpoint.
var runViewFlags = map[string]bool{"run": true, "json": true, "png": true}

// Text layout of the run view: every curve's sparkline starts at column
// runLabelW and is as wide as fits the terminal, within these bounds, so
// that the columns of all curves stand for the same steps.
const (
	runLabelW      = 26
	runSuffixW     = 26
	minSparkWidth  = 20
	maxSparkWidth  = 100
	runPNGSubtitle = "heads: strongest role at the last evaluation, its score at each evaluation"
)

// showRun is inspect -run DIR: the run's loss and accuracy curves and each
// head's strongest role through training, as text, -json or -png.
func showRun(o options, fs *flag.FlagSet, stdout io.Writer) error {
	var other []string
	fs.Visit(func(f *flag.Flag) {
		if !runViewFlags[f.Name] {
			other = append(other, "-"+f.Name)
		}
	})
	if len(other) > 0 {
		return errors.Errorf("%s: needs -checkpoint (-run DIR alone shows the run and takes only -json and -png)", strings.Join(other, ", "))
	}
	if len(o.runs) > 1 {
		return compareRuns(o, stdout)
	}
	if err := checkRunPath(o.run); err != nil {
		return err
	}
	inputs := []string{filepath.Join(o.run, rundir.MetricsFile), filepath.Join(o.run, rundir.RolesFile), filepath.Join(o.run, rundir.CircuitsFile)}
	if o.png != "" {
		if err := rundir.CheckOutput(o.png, inputs); err != nil {
			return errors.Wrap(err, "-png")
		}
	}
	r, err := rundir.ReadLogs(o.run)
	if err != nil {
		return err
	}
	if len(r.Train) == 0 && len(r.Eval) == 0 {
		return errors.Errorf("%s: no training or evaluation lines yet", filepath.Join(o.run, rundir.MetricsFile))
	}
	if o.png != "" {
		img, _, err := render.Chart(runTitle(r), "step", firstStep(r), lastStep(r), runPanels(r))
		if err != nil {
			return err
		}
		if err := rundir.WriteOutput(o.png, inputs, func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
			return errors.Wrap(err, "-png")
		}
	}
	if o.json {
		return writeJSONLine(stdout, r)
	}
	if err := writeRunText(stdout, r, width(stdout)); err != nil {
		return errors.Wrap(err, "writing output")
	}
	if o.png != "" {
		_, err := fmt.Fprintf(stdout, "wrote %s\n", o.png)
		return errors.Wrap(err, "writing output")
	}
	return nil
}

func firstStep(r *rundir.Logs) float64 {
	first := math.Inf(1)
	if len(r.Train) > 0 {
		first = float64(r.Train[0].Step)
	}
	if len(r.Eval) > 0 {
		first = math.Min(first, float64(r.Eval[0].Step))
	}
	return first
}

func lastStep(r *rundir.Logs) float64 {
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

// curve is one line of the run view: its name, points, and the scale shown.
type curve struct {
	name   string
	xs, ys []float64
	lo, hi float64
}

// runCurves are the metrics curves: training and held-out loss on one scale
// from 0 to the highest loss, the accuracies from 0 to 1.
func runCurves(r *rundir.Logs) []curve {
	var trainLoss, evalLoss, tokenAcc, seqAcc curve
	trainLoss.name, evalLoss.name, tokenAcc.name, seqAcc.name = "train loss", "held-out loss", "token accuracy", "exact match"
	for _, p := range r.Train {
		trainLoss.xs, trainLoss.ys = append(trainLoss.xs, float64(p.Step)), append(trainLoss.ys, p.Loss)
	}
	for _, p := range r.Eval {
		x := float64(p.Step)
		evalLoss.xs, evalLoss.ys = append(evalLoss.xs, x), append(evalLoss.ys, p.EvalLoss)
		tokenAcc.xs, tokenAcc.ys = append(tokenAcc.xs, x), append(tokenAcc.ys, p.TokenAcc)
		seqAcc.xs, seqAcc.ys = append(seqAcc.xs, x), append(seqAcc.ys, p.SeqAcc)
	}
	maxLoss := 0.0
	for _, c := range []curve{trainLoss, evalLoss} {
		for _, y := range c.ys {
			maxLoss = math.Max(maxLoss, y)
		}
	}
	// The loss scale tops out at a round number above the highest loss, so a
	// flat curve shows at its height rather than as a full bar.
	top := roundUp(maxLoss)
	trainLoss.hi, evalLoss.hi, tokenAcc.hi, seqAcc.hi = top, top, 1, 1
	var out []curve
	for _, c := range []curve{trainLoss, evalLoss, tokenAcc, seqAcc} {
		if len(c.xs) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// roundUp is the smallest of 1, 1.5, 2, 3, 4, 5, 6, 8 times a power of ten
// that is above v (v itself when it is not positive).
func roundUp(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return v
	}
	scale := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 3, 4, 5, 6, 8, 10} {
		if m*scale > v {
			return m * scale
		}
	}
	return 10 * scale
}

// headName names a head and its role, as in "L1 H3 induction"; a head whose
// strongest pattern ends under the role threshold is "diffuse", as every
// other view names it.
func headName(h rundir.HeadHistory) string {
	if diffuse(h) {
		return fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, heads.Diffuse)
	}
	return fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, h.Role)
}

// diffuse reports whether the head's last score is under the role threshold.
func diffuse(h rundir.HeadHistory) bool {
	return h.Scores[len(h.Scores)-1] < heads.DefaultThreshold
}

// headScore is the head's last score, with its strongest pattern when the
// head is diffuse: "0.91", or "diffuse (best: offset 0.03)".
func headScore(h rundir.HeadHistory) string {
	last := h.Scores[len(h.Scores)-1]
	if diffuse(h) {
		return heads.Below(string(h.Role), last)
	}
	return fmt.Sprintf("%.2f", last)
}

// formed says when a head's role first passed rundir.FormedAt.
func formed(h rundir.HeadHistory) string {
	if h.Formed == nil {
		return fmt.Sprintf("never above %.1f", rundir.FormedAt)
	}
	return fmt.Sprintf("formed at step %d", *h.Formed)
}

// writeRunText prints the curves and the heads' roles as sparklines sharing
// one step axis, fitted to width columns.
func writeRunText(w io.Writer, r *rundir.Logs, width int) error {
	x0, x1 := firstStep(r), lastStep(r)
	spark := max(minSparkWidth, min(maxSparkWidth, width-runLabelW-runSuffixW))
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", strings.Join(runTitle(r), "\n"))
	from, to := fmt.Sprintf("step %d", int(x0)), fmt.Sprintf("%d", int(x1))
	fmt.Fprintf(&b, "%-*s%s%*s\n", runLabelW, "", from, spark-len(from), to)
	for _, c := range runCurves(r) {
		label := fmt.Sprintf("%s (0-%s)", c.name, short(c.hi))
		fmt.Fprintf(&b, "%-*s%s  %s -> %s\n", runLabelW, label, render.Sparkline(c.xs, c.ys, x0, x1, spark, c.lo, c.hi), short(c.ys[0]), short(c.ys[len(c.ys)-1]))
	}
	if r.Heads == nil {
		fmt.Fprintf(&b, "\nno %s: the run has no head roles (evaluation off, or written before they were recorded)\n", rundir.RolesFile)
	} else {
		fmt.Fprintf(&b, "\nheads: strongest role at the last evaluation, its score (0-1) at each evaluation,\n  on the run's first %d held-out rows (%s; inspect's heatmaps score -samples examples)\n", rundir.RoleRows, rundir.RolesFile)
		for _, layer := range r.Heads {
			for _, h := range layer {
				xs := make([]float64, len(h.Steps))
				for i, s := range h.Steps {
					xs[i] = float64(s)
				}
				fmt.Fprintf(&b, "%-*s%s  %s %s\n", runLabelW, headName(h), render.Sparkline(xs, h.Scores, x0, x1, spark, 0, 1), headScore(h), formed(h))
			}
		}
	}
	writeCircuitsText(&b, r, x0, x1, spark)
	_, err := io.WriteString(w, b.String())
	return err
}

// circuitSeries are circuits.jsonl's curves: each head's prefix-matching
// score (0 to 1) and the ICL score (its lowest value to 0); nil without the
// file.
func circuitSeries(r *rundir.Logs) (prefix []curve, icl *curve) {
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

// writeCircuitsText adds circuits.jsonl's curves to the run's text view.
func writeCircuitsText(b *strings.Builder, r *rundir.Logs, x0, x1 float64, spark int) {
	prefix, icl := circuitSeries(r)
	if prefix == nil && icl == nil {
		return
	}
	fmt.Fprintf(b, "\ncircuits (%s): each head's prefix-matching score (0-1) on %d sequences of\n  random tokens repeated twice", rundir.CircuitsFile, rundir.RoleRows)
	if icl != nil {
		fmt.Fprintf(b, ", and the ICL score (the copy's loss minus the same\n  predictions' at the block's first occurrence, nats)")
	}
	fmt.Fprintf(b, "\n")
	for _, c := range prefix {
		fmt.Fprintf(b, "%-*s%s  %s -> %s\n", runLabelW, c.name+" prefix", render.Sparkline(c.xs, c.ys, x0, x1, spark, 0, 1), short(c.ys[0]), short(c.ys[len(c.ys)-1]))
	}
	if icl != nil {
		fmt.Fprintf(b, "%-*s%s  %s -> %s\n", runLabelW, fmt.Sprintf("ICL score (%s-0)", short(icl.lo)), render.Sparkline(icl.xs, icl.ys, x0, x1, spark, icl.lo, 0), short(icl.ys[0]), short(icl.ys[len(icl.ys)-1]))
	}
}

// runTitle names the run, its steps and its evaluations.
func runTitle(r *rundir.Logs) []string {
	return []string{fmt.Sprintf("run %s: steps %d-%d, %d evaluations", r.Dir, int(firstStep(r)), int(lastStep(r)), len(r.Eval))}
}

// short prints a curve value in at most 5 significant digits.
func short(v float64) string { return fmt.Sprintf("%.4g", v) }

// runPanels are the -png view: the losses, the accuracies and, when the
// run has roles.jsonl, one line per head with a guide at rundir.FormedAt.
func runPanels(r *rundir.Logs) []render.ChartPanel {
	grey := color.RGBA{150, 150, 150, 255}
	loss := render.ChartPanel{Title: "loss"}
	acc := render.ChartPanel{Title: "held-out accuracy", YMax: 1}
	for i, c := range runCurves(r) {
		s := render.Series{Name: c.name, X: c.xs, Y: c.ys, Color: render.Palette[i%len(render.Palette)]}
		if strings.HasSuffix(c.name, "loss") {
			if c.name == "train loss" {
				s.Color = grey
			}
			loss.Series, loss.YMax = append(loss.Series, s), c.hi
		} else {
			acc.Series = append(acc.Series, s)
		}
	}
	var panels []render.ChartPanel
	if len(loss.Series) > 0 {
		if !(loss.YMax > 0) {
			loss.YMax = 1 // losses of 0 or below (a broken log) still draw, on a 0-1 scale
		}
		panels = append(panels, loss)
	}
	if len(acc.Series) > 0 {
		panels = append(panels, acc)
	}
	if r.Heads != nil {
		roles := render.ChartPanel{Title: runPNGSubtitle, YMax: 1, Guides: []float64{rundir.FormedAt}}
		n := 0
		for _, layer := range r.Heads {
			for _, h := range layer {
				name := headName(h)
				if diffuse(h) {
					name = fmt.Sprintf("L%d H%d %s", h.Layer, h.Head, headScore(h))
				}
				s := render.Series{Name: name + ", " + formed(h), Y: h.Scores, Color: render.Palette[n%len(render.Palette)]}
				for _, step := range h.Steps {
					s.X = append(s.X, float64(step))
				}
				roles.Series = append(roles.Series, s)
				n++
			}
		}
		panels = append(panels, roles)
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

// checkRunPath refuses a file given as -run, saying what to pass instead: a
// checkpoint's directory, or the checkpoint itself with -checkpoint.
func checkRunPath(path string) error {
	info, err := os.Stat(path)
	if err != nil || info.IsDir() {
		return nil // rundir.Read reports a missing directory
	}
	if strings.HasSuffix(path, ".safetensors") {
		return errors.Errorf("-run %s: is a checkpoint file; -run takes its run directory (-run %s), and -checkpoint %s shows the model", path, filepath.Dir(path), path)
	}
	return errors.Errorf("-run %s: is a file; -run takes a run directory written by train (one holding %s)", path, rundir.MetricsFile)
}

// compareRuns is inspect -run A -run B ...: every run's curves on one step
// axis and one scale per curve, each run tagged a, b, ... (text), one
// coloured line per run and curve (-png), or the runs as a JSON array.
func compareRuns(o options, stdout io.Writer) error {
	var runs []*rundir.Logs
	var inputs []string
	for _, dir := range o.runs {
		if err := checkRunPath(dir); err != nil {
			return err
		}
		r, err := rundir.ReadLogs(dir)
		if err != nil {
			return err
		}
		if len(r.Train) == 0 && len(r.Eval) == 0 {
			return errors.Errorf("%s: no training or evaluation lines yet", filepath.Join(dir, rundir.MetricsFile))
		}
		runs = append(runs, r)
		inputs = append(inputs, filepath.Join(dir, rundir.MetricsFile), filepath.Join(dir, rundir.RolesFile))
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		x0, x1 = math.Min(x0, firstStep(r)), math.Max(x1, lastStep(r))
	}
	tags := make([]string, len(runs))
	for i := range runs {
		tags[i] = string(rune('a' + i%26))
	}
	if o.png != "" {
		if err := rundir.CheckOutput(o.png, inputs); err != nil {
			return errors.Wrap(err, "-png")
		}
		img, _, err := render.Chart(compareTitle(runs, tags), "step", x0, x1, comparePanels(runs, tags))
		if err != nil {
			return err
		}
		if err := rundir.WriteOutput(o.png, inputs, func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
			return errors.Wrap(err, "-png")
		}
	}
	if o.json {
		return writeJSONLine(stdout, runs)
	}
	if err := writeCompareText(stdout, runs, tags, x0, x1, width(stdout)); err != nil {
		return errors.Wrap(err, "writing output")
	}
	if o.png != "" {
		_, err := fmt.Fprintf(stdout, "wrote %s\n", o.png)
		return errors.Wrap(err, "writing output")
	}
	return nil
}

// compareTitle names each run with its tag, steps and evaluations.
func compareTitle(runs []*rundir.Logs, tags []string) []string {
	var title []string
	for i, r := range runs {
		title = append(title, fmt.Sprintf("%s: %s", tags[i], runTitle(r)[0]))
	}
	return title
}

// writeCompareText prints, for each curve, one sparkline per run on the
// shared axis and scale, then each run's heads.
func writeCompareText(w io.Writer, runs []*rundir.Logs, tags []string, x0, x1 float64, width int) error {
	spark := max(minSparkWidth, min(maxSparkWidth, width-runLabelW-runSuffixW))
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", strings.Join(compareTitle(runs, tags), "\n"))
	from, to := fmt.Sprintf("step %d", int(x0)), fmt.Sprintf("%d", int(x1))
	fmt.Fprintf(&b, "%-*s%s%*s\n", runLabelW, "", from, spark-len(from), to)
	curves := make([][]curve, len(runs))
	hi := map[string]float64{}
	for i, r := range runs {
		curves[i] = runCurves(r)
		for _, c := range curves[i] {
			hi[c.name] = math.Max(hi[c.name], c.hi)
		}
	}
	for _, name := range []string{"train loss", "held-out loss", "token accuracy", "exact match"} {
		for i := range runs {
			for _, c := range curves[i] {
				if c.name != name {
					continue
				}
				label := fmt.Sprintf("%s %s (0-%s)", tags[i], c.name, short(hi[name]))
				fmt.Fprintf(&b, "%-*s%s  %s -> %s\n", runLabelW, label, render.Sparkline(c.xs, c.ys, x0, x1, spark, c.lo, hi[name]), short(c.ys[0]), short(c.ys[len(c.ys)-1]))
			}
		}
	}
	for i, r := range runs {
		if r.Heads == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s: heads, strongest role at the last evaluation, its score (0-1) at each evaluation\n", tags[i])
		for _, layer := range r.Heads {
			for _, h := range layer {
				xs := make([]float64, len(h.Steps))
				for j, s := range h.Steps {
					xs[j] = float64(s)
				}
				fmt.Fprintf(&b, "%-*s%s  %s %s\n", runLabelW, tags[i]+" "+headName(h), render.Sparkline(xs, h.Scores, x0, x1, spark, 0, 1), headScore(h), formed(h))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// comparePanels are the -png view of several runs: the held-out loss and
// the held-out accuracies, one line per run (named by its tag and curve).
func comparePanels(runs []*rundir.Logs, tags []string) []render.ChartPanel {
	loss := render.ChartPanel{Title: "held-out loss"}
	acc := render.ChartPanel{Title: "held-out accuracy", YMax: 1}
	n := 0
	for i, r := range runs {
		for _, c := range runCurves(r) {
			s := render.Series{Name: tags[i] + " " + c.name, X: c.xs, Y: c.ys, Color: render.Palette[n%len(render.Palette)]}
			switch c.name {
			case "held-out loss":
				loss.Series, loss.YMax = append(loss.Series, s), math.Max(loss.YMax, c.hi)
			case "token accuracy", "exact match":
				acc.Series = append(acc.Series, s)
			default:
				continue
			}
			n++
		}
	}
	var panels []render.ChartPanel
	if len(loss.Series) > 0 {
		panels = append(panels, loss)
	}
	if len(acc.Series) > 0 {
		panels = append(panels, acc)
	}
	return panels
}
