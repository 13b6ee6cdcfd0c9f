package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/runlog"
)

// MaxPageExamples caps the held-out examples the page embeds besides the
// sequence shown, and pageValueBudget the attention and logit values they
// add (each prints as up to ~12 bytes of JSON), so that a large model still
// gives a page of a few megabytes at most: past the budget the page embeds
// none (one 101-token example of GPT-2 small's 144 heads alone was 11.5 MB).
const (
	MaxPageExamples = 16
	pageValueBudget = 120_000
)

// maxCurvePoints caps the training lines the page plots and the points of
// each head's role through training; a longer log is thinned to every k-th
// point (the last maxCurvePoints evaluation lines are kept).
const maxCurvePoints = 2000

// Page is the HTML page's data (package render/htmlview); Build must have
// run with Options.Page. Its inspect member is the -json document of every
// head, whatever the views select, but its attention, which Maps carries
// compactly.
func (r *Report) Page() (htmlview.Data, error) {
	inspect, err := json.Marshal(struct {
		Document
		Attention any `json:"attention,omitempty"`
	}{Document: r.document(every(r.Config.Layers, r.Config.Heads))})
	if err != nil {
		return htmlview.Data{}, errors.Wrap(err, "encoding the page's data")
	}
	o, v := r.Options, r.Text(true)
	roleNote := v.RolesNote()
	if r.TaskNote != "" {
		roleNote += "; " + r.TaskNote // how the examples were drawn, as the text view says
	}
	d := htmlview.Data{
		Title:      "attnscope: " + v.Title(),
		Checkpoint: o.Checkpoint, Step: r.Step, Task: r.Task.Name(), Source: r.Source, Heading: v.Heading(),
		Dtype: r.Dtype.String(), Params: r.Params, Model: r.Config, Inspect: inspect, Maps: pageMaps(r.Forward), Thumbs: r.pageThumbs(r.Forward),
		RoleNote: roleNote, PredictedLabels: v.Sequence.Predicted,
		Examples: r.Examples, Training: r.Training, Compare: r.Compare, Labels: labels(r.Task, r.Sequence.Tokens),
	}
	if r.Graph != nil && len(r.Passes) > 0 {
		d.Graph, d.GraphBatch, d.GraphLength = r.Graph, r.Passes[0].Batch, r.Passes[0].Length
	}
	return d, nil
}

// pageExamples is how many held-out examples the page embeds for a model of
// config cfg on sequences of length t, given the number of samples: as many
// as the budget holds, counting the logits as carried (each position's top
// LogitsTopK ids and logits and its log-sum-exp past MaxLogitValues).
func pageExamples(cfg model.Config, t, samples int) int {
	logits := t * cfg.Vocab
	if logits > MaxLogitValues {
		logits = t * (2*LogitsTopK + 1)
	}
	perExample := cfg.Layers*cfg.Heads*t*t + logits
	return min(samples, MaxPageExamples, pageValueBudget/perExample)
}

// heldOut runs the model on the first n examples of the run's held-out set
// (data.EvalSet of the run's seed: sequences training never drew).
func (r *Report) heldOut(m *model.Model, seed uint64, n int) ([]htmlview.Example, error) {
	if n == 0 {
		return nil, nil
	}
	task := r.Task
	set := data.EvalSet(task, n, seed)
	c, err := r.run(m, set, analysis.Weights(m))
	if err != nil {
		return nil, err
	}
	out := make([]htmlview.Example, n)
	for i := range n {
		tokens, targets, mask := set.Row(i)
		fw, err := c.Pass(i)
		if err != nil {
			return nil, err
		}
		ex := htmlview.Example{Source: fmt.Sprintf("held-out %d", i), Tokens: tokens, Predictions: fw.Predictions, Targets: scoredTargets(tokens, targets, mask)}
		ex.Labels, ex.PredictedLabels = labels(task, tokens), labels(task, fw.Predictions)
		_, ex.Logits, ex.CutLogits = numbers(m.Dtype, fw, false)
		ex.Maps, ex.Thumbs = pageMaps(fw), r.pageThumbs(fw)
		out[i] = ex
	}
	return out, nil
}

// RunDir is the run directory the page plots: the first of Runs, or else
// the run directory Checkpoint names or its checkpoint lies in.
func (o Options) RunDir() string {
	if len(o.Runs) > 0 {
		return o.Runs[0]
	}
	if info, err := os.Stat(o.Checkpoint); err == nil && info.IsDir() {
		return o.Checkpoint
	}
	return filepath.Dir(o.Checkpoint)
}

// RunInputs are the page's run's metrics and head roles, which no output
// may replace; the model's own files are its opener's (Subject.Inputs).
func (o Options) RunInputs() []string {
	dir := o.RunDir()
	return []string{filepath.Join(dir, runlog.MetricsFile), filepath.Join(dir, runlog.RolesFile)}
}

// Inputs are every file the views read or may read: the model's
// (Subject.Inputs) and the page's run's (Options.RunInputs), what the
// outputs are checked against when written.
func (r *Report) Inputs() []string {
	return append(r.Options.RunInputs(), r.opened...)
}

// readPageRuns reads the runs the page plots: the first run directory's
// metrics.jsonl and roles.jsonl (if the run recorded head roles), where
// metrics.jsonl must exist when Runs names it; else the checkpoint's
// directory when it holds one (nil when it does not). The other runs
// give their held-out curves alone.
func readPageRuns(o Options) (*htmlview.Training, []htmlview.Training, error) {
	dir := o.RunDir()
	if len(o.Runs) > 0 {
		if err := CheckRunPath(dir); err != nil {
			return nil, nil, err
		}
	} else if _, err := os.Lstat(filepath.Join(dir, runlog.MetricsFile)); errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	training, err := trainingOf(dir)
	if err != nil {
		return nil, nil, err
	}
	var compare []htmlview.Training
	for _, dir := range o.Runs[min(1, len(o.Runs)):] {
		if err := CheckRunPath(dir); err != nil {
			return nil, nil, err
		}
		tr, err := trainingOf(dir)
		if err != nil {
			return nil, nil, err
		}
		tr.Heads = nil
		compare = append(compare, *tr)
	}
	return training, compare, nil
}

// trainingOf reads a run directory's logs for the page, thinned to
// maxCurvePoints.
func trainingOf(dir string) (*htmlview.Training, error) {
	run, err := runlog.ReadLogs(dir)
	if err != nil {
		return nil, err
	}
	tr := &htmlview.Training{Dir: dir, Eval: run.Eval, AtLength: run.AtLength, Unit: languageUnit(dir), Heads: run.Heads}
	tr.Train, tr.Stride = thin(run.Train, maxCurvePoints)
	if len(tr.Eval) > maxCurvePoints {
		tr.Eval = tr.Eval[len(tr.Eval)-maxCurvePoints:]
	}
	if len(tr.AtLength) > maxCurvePoints {
		tr.AtLength = tr.AtLength[len(tr.AtLength)-maxCurvePoints:]
	}
	for _, layer := range tr.Heads {
		for h := range layer {
			layer[h].Steps, _ = thin(layer[h].Steps, maxCurvePoints)
			layer[h].Scores, _ = thin(layer[h].Scores, maxCurvePoints)
		}
	}
	return tr, nil
}

// thin keeps every stride-th of xs (from the first), stride the smallest
// that leaves at most n.
func thin[T any](xs []T, n int) (kept []T, stride int) {
	if len(xs) <= n {
		return xs, 1
	}
	stride = (len(xs) + n - 1) / n
	for i := 0; i < len(xs); i += stride {
		kept = append(kept, xs[i])
	}
	return kept, stride
}

// pageThumbs is what the page's grid draws of every head's attention on
// a pass longer than htmlview.ThumbSide (htmlview.EncodeThumb),
// [layer][head]; nil for a shorter one, whose maps the grid draws.
func (r *Report) pageThumbs(fw analysis.Pass) [][]string {
	shape := fw.Attention.Shape
	if shape[2] <= htmlview.ThumbSide {
		return nil
	}
	thumbs := make([][]string, shape[0])
	for l := range thumbs {
		for h := range shape[1] {
			thumbs[l] = append(thumbs[l], htmlview.EncodeThumb(fw.Map(l, h), r.Config.LayerWindow(l)))
		}
	}
	return thumbs
}

// pageMaps is every head's attention on a pass as the page carries it
// (htmlview.EncodeMap), [layer][head].
func pageMaps(fw analysis.Pass) [][]string {
	shape := fw.Attention.Shape
	maps := make([][]string, shape[0])
	for l := range maps {
		for h := range shape[1] {
			maps[l] = append(maps[l], htmlview.EncodeMap(fw.Map(l, h)))
		}
	}
	return maps
}
