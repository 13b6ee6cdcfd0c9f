package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/attnscope/attnscope/analysis"

	"github.com/pkg/errors"
	"go.yaml.in/yaml/v3"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/rundir"
)

// maxPageExamples caps the held-out examples the -html page embeds besides
// the displayed sequence, and pageValueBudget the attention and logit values
// they add (each prints as up to ~12 bytes of JSON), so that a large model
// still gives a page of a few megabytes at most.
const (
	maxPageExamples = 16
	pageValueBudget = 120_000
)

// maxCurvePoints caps the training lines the page plots and the points of
// each head's role through training; a longer log is thinned to every k-th
// point (the last maxCurvePoints evaluation lines are kept).
const maxCurvePoints = 2000

// pageExamples is how many held-out examples the page embeds for a model of
// config cfg on sequences of length t, given -samples.
func pageExamples(cfg model.Config, t, samples int) int {
	perExample := cfg.Layers*cfg.Heads*t*t + t*cfg.Vocab
	return max(1, min(samples, maxPageExamples, pageValueBudget/perExample))
}

// heldOut runs the model on the first n examples of the run's held-out set
// (data.EvalSet of the run's seed: sequences training never drew).
func heldOut(m *model.Model, task data.Task, seed uint64, n int) ([]htmlview.Example, error) {
	set := data.EvalSet(task, n, seed)
	c, err := analysis.RunWithCache(m, set, analysis.Weights(m)...)
	if err != nil {
		return nil, err
	}
	out := make([]htmlview.Example, n)
	for i := range n {
		tokens, targets, mask := set.Row(i)
		s := sequence{tokens: tokens, targets: targets, scored: mask}
		fw, err := c.Pass(i)
		if err != nil {
			return nil, err
		}
		ex := htmlview.Example{Source: fmt.Sprintf("held-out %d", i), Tokens: tokens, Predictions: fw.Predictions, Targets: scoredTargets(s)}
		ex.Labels = labels(task, tokens)
		ex.Attention, ex.Logits = numbers(m.Dtype, fw)
		if cut := cutLogits(fw.Logits.Matrix(), false); cut != nil {
			ex.Logits, ex.CutLogits = nil, *cut
		}
		out[i] = ex
	}
	return out, nil
}

// maxLogitValues is the most logits -json and the page carry for one
// sequence (positions x vocabulary) before they carry only each position's
// top logitsTopK and its log-sum-exp: a 65536-symbol vocabulary would
// otherwise put millions of numbers in the output.
const (
	maxLogitValues = 1 << 16
	logitsTopK     = 16
)

// topLogit is one of a position's largest logits.
type topLogit struct {
	ID    int     `json:"id"`
	Logit float64 `json:"logit"`
}

// cutLogits reduces logits [position][vocab] when they exceed
// maxLogitValues and all is false, else returns nil (keep them whole).
func cutLogits(logits [][]float64, all bool) *htmlview.CutLogits {
	if all || len(logits) == 0 || len(logits)*len(logits[0]) <= maxLogitValues {
		return nil
	}
	v := len(logits[0])
	c := &htmlview.CutLogits{Note: fmt.Sprintf("the top %d of %d logits per position, with each position's log-sum-exp (logits_lse); -all-logits prints every one", logitsTopK, v)}
	var tops [][]topLogit
	for _, row := range logits {
		ids := make([]int, v)
		for i := range ids {
			ids[i] = i
		}
		slices.SortStableFunc(ids, func(a, b int) int { return cmpDesc(row[a], row[b]) })
		top := make([]topLogit, logitsTopK)
		for k := range top {
			top[k] = topLogit{ID: ids[k], Logit: row[ids[k]]}
		}
		maxv, sum := row[ids[0]], 0.0
		for _, x := range row {
			sum += math.Exp(x - maxv)
		}
		tops = append(tops, top)
		c.LSE = append(c.LSE, maxv+math.Log(sum))
	}
	c.Top = tops
	return c
}

// cmpDesc orders larger values first.
func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// forwardSummary is the summary of the forward graph -graph prints.
func forwardSummary(m *model.Model, cfg rundir.Config) (*model.Summary, error) {
	g, err := graphOf(m, cfg, false)
	if err != nil {
		return nil, err
	}
	s, err := g.Summary()
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// numbers is a pass's attention and logits as -json prints them: float32 for
// a Float32 model.
func numbers(dtype tensor.Dtype, fw analysis.Pass) (attention, logits any) {
	cfg := fw.Attention.Shape
	att := make([][][][]float64, cfg[0])
	for l := range att {
		for h := range cfg[1] {
			att[l] = append(att[l], fw.Map(l, h))
		}
	}
	if dtype == tensor.Float32 {
		return attention32(att), rows32(fw.Logits.Matrix())
	}
	return att, fw.Logits.Matrix()
}

// readTraining reads the run directory's metrics.jsonl and roles.jsonl (if
// the run recorded head roles) for the page: the directory given with -run
// (where metrics.jsonl must exist), else the checkpoint's directory when it
// holds one. nil means there is nothing to plot.
func readTraining(o options) (*htmlview.Training, error) {
	dir := runDir(o)
	if err := checkRunPath(o.run); o.run != "" && err != nil {
		return nil, err
	}
	if o.run == "" {
		if _, err := os.Lstat(filepath.Join(dir, metricsFile)); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	return trainingOf(dir)
}

// compareTraining reads the runs given after the first -run, whose held-out
// curves the page draws beside the checkpoint's run (no head roles).
func compareTraining(o options) ([]htmlview.Training, error) {
	var out []htmlview.Training
	for _, dir := range o.runs[min(1, len(o.runs)):] {
		if err := checkRunPath(dir); err != nil {
			return nil, err
		}
		tr, err := trainingOf(dir)
		if err != nil {
			return nil, err
		}
		tr.Heads = nil
		out = append(out, *tr)
	}
	return out, nil
}

// trainingOf reads a run directory's logs for the page, thinned to
// maxCurvePoints.
func trainingOf(dir string) (*htmlview.Training, error) {
	run, err := rundir.ReadLogs(dir)
	if err != nil {
		return nil, err
	}
	tr := &htmlview.Training{Dir: dir, Eval: run.Eval, Heads: run.Heads}
	tr.Train, tr.Stride = thin(run.Train, maxCurvePoints)
	if len(tr.Eval) > maxCurvePoints {
		tr.Eval = tr.Eval[len(tr.Eval)-maxCurvePoints:]
	}
	for _, layer := range tr.Heads {
		for h := range layer {
			layer[h].Steps, _ = thin(layer[h].Steps, maxCurvePoints)
			layer[h].Scores, _ = thin(layer[h].Scores, maxCurvePoints)
		}
	}
	return tr, nil
}

// checkRunHeads refuses head roles through training recorded for another
// shape of model (a -run of a different model): the page opens a head from
// its row.
func checkRunHeads(tr *htmlview.Training, cfg model.Config) error {
	if tr == nil || len(tr.Heads) == 0 {
		return nil
	}
	if len(tr.Heads) != cfg.Layers || len(tr.Heads[0]) != cfg.Heads {
		return errors.Errorf("%s: head roles of %d layers x %d heads, but the checkpoint has %d x %d (is it a file of another run?)",
			filepath.Join(tr.Dir, rundir.RolesFile), len(tr.Heads), len(tr.Heads[0]), cfg.Layers, cfg.Heads)
	}
	return nil
}

// checkRunConfig refuses to plot a run whose config.yaml differs from the
// checkpoint's config (another run's curves under this model), naming the
// differing keys. train.steps may differ: an extended run raises it after
// earlier checkpoints were written. A run without config.yaml is not
// checked.
func checkRunConfig(tr *htmlview.Training, cfg rundir.Config) error {
	if tr == nil {
		return nil
	}
	path := filepath.Join(tr.Dir, "config.yaml")
	src, err := safefile.ReadLimit(path, 1<<20, "a config may take")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var run, saved map[string]any
	if err := yaml.Unmarshal(src, &run); err != nil {
		return errors.Wrapf(err, "%s", path)
	}
	runConfig, err := json.Marshal(cfg)
	if err != nil {
		return errors.Wrap(err, "the checkpoint's config")
	}
	if err := json.Unmarshal(runConfig, &saved); err != nil {
		return errors.Wrap(err, "the checkpoint's config")
	}
	have, want := flatten("", run), flatten("", saved)
	var diff []string
	for key, v := range want {
		if w, ok := have[key]; ok && w != v && key != "train.steps" {
			diff = append(diff, fmt.Sprintf("%s (%s in the checkpoint, %s in the run)", key, msg.Clean(v), msg.Clean(w)))
		}
	}
	if len(diff) == 0 {
		return nil
	}
	slices.Sort(diff)
	if len(diff) > 3 {
		diff = append(diff[:3], fmt.Sprintf("%d more", len(diff)-3))
	}
	return errors.Errorf("-run %s is another run: %s differs from the checkpoint's config in %s; pass the checkpoint's own run directory", tr.Dir, path, strings.Join(diff, ", "))
}

// flatten maps a decoded YAML or JSON object to dotted keys and printed
// values, numbers as float64 so that 3 and 3.0 and 3e0 compare equal.
func flatten(prefix string, v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			for kk, vv := range flatten(key, child) {
				out[kk] = vv
			}
		}
	case int:
		out[prefix] = fmt.Sprint(float64(x))
	case uint64:
		out[prefix] = fmt.Sprint(float64(x))
	case nil:
	default:
		out[prefix] = fmt.Sprint(x)
	}
	return out
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

// runDir is -run, or else the run directory -checkpoint names or its
// checkpoint lies in.
func runDir(o options) string {
	if o.run != "" {
		return o.run
	}
	if info, err := os.Stat(o.checkpoint); err == nil && info.IsDir() {
		return o.checkpoint
	}
	return filepath.Dir(o.checkpoint)
}

// metricsFile is the run directory's metrics log (see package train).
const metricsFile = "metrics.jsonl"

// inputs are the files inspect reads, which no output may replace: the
// checkpoint and, for -html, the run's metrics and head roles.
func (o options) inputs() []string {
	return []string{o.checkpoint, filepath.Join(runDir(o), metricsFile), filepath.Join(runDir(o), rundir.RolesFile)}
}

// writeHTML writes the interactive page atomically.
func (r report) writeHTML(path string) error {
	inspect, err := json.Marshal(r.jsonObject())
	if err != nil {
		return errors.Wrap(err, "encoding the page's data")
	}
	rowsUsed := "at the positions the task scores"
	if r.opts.allRows {
		rowsUsed = "at every position"
	}
	d := htmlview.Data{
		Title:      fmt.Sprintf("attnscope: %s, step %d", r.task.Name(), r.step),
		Checkpoint: r.opts.checkpoint, Step: r.step, Task: r.task.Name(),
		Dtype: r.dtype.String(), Params: r.params, Model: r.cfg, Inspect: inspect,
		RoleNote: fmt.Sprintf("pooled over %d examples of %s (seed %d), %s", r.opts.samples, r.task.Name(), r.opts.seed, rowsUsed),
		Examples: r.pageExamples, Training: r.training, Compare: r.compare, Graph: r.graph,
	}
	err = rundir.WriteOutput(path, r.opts.inputs(), func(w io.Writer) error { return htmlview.Write(w, d) })
	return errors.Wrap(err, "-html")
}
