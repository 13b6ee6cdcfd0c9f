package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
)

// Pass is what one forward pass over one sequence gives.
type Pass struct {
	Attention   [][][][]float64 // [layer][head][query][key]
	Logits      [][]float64     // [position][vocab]
	Predictions []int           // [position] argmax of the logits
}

// Forward runs the model on one sequence (an inference graph with Batch 1):
// tokens, their next-token targets and the scored mask, each of length T.
func Forward(m *model.Model, tokens, targets []int, scored []float64) (Pass, error) {
	t := len(tokens)
	att, logits, err := Run(m, 1, t, tokens, targets, scored)
	if err != nil {
		return Pass{}, err
	}
	p := Pass{Logits: Rows(logits, m.Config.Vocab)}
	for _, a := range att {
		p.Attention = append(p.Attention, a[0])
	}
	p.Predictions = Argmax(p.Logits)
	return p, nil
}

// Argmax is the index of each row's largest value (the first on a tie).
func Argmax(m [][]float64) []int {
	out := make([]int, len(m))
	for i, row := range m {
		for v, x := range row {
			if x > row[out[i]] {
				out[i] = v
			}
		}
	}
	return out
}

// Pooled is what n examples of a task give: every head's role and its
// attention averaged over the examples.
type Pooled struct {
	Roles  [][]heads.Result // [layer][head]
	Mean   [][][][]float64  // [layer][head][query][key], the mean over the examples
	Sep    []bool           // positions that hold the separator in every example
	Scored []bool           // positions every example scores (the task's mask)
}

// SamplesStream is the second PCG word of the examples ScoreHeads draws
// from its seed (inspect shows its one sequence from stream 1, so changing
// the number of examples never changes the sequence shown).
const SamplesStream uint64 = 2

// ScoreHeads draws n examples of the task from seed and pools every head's
// pattern scores over them: over the query rows the task scores, or over
// every row when allRows is set or the task asks for it
// (data.RolesOnEveryRow). It also averages each head's weights.
func ScoreHeads(m *model.Model, task data.Task, n int, seed uint64, allRows bool) (Pooled, error) {
	b := data.NewBatch(n, task.SeqLen())
	if err := data.Fill(task, b, rand.New(rand.NewPCG(seed, SamplesStream))); err != nil {
		return Pooled{}, err
	}
	return ScoreBatch(m, task, b, allRows)
}

// ScoreBatch is ScoreHeads over the examples of b, of the model's task:
// sequences of any length the model runs at.
func ScoreBatch(m *model.Model, task data.Task, b *data.Batch, allRows bool) (Pooled, error) {
	cfg := m.Config
	n, t := b.Size, b.SeqLen
	att, _, err := Run(m, n, t, b.Tokens, b.Targets, b.Mask)
	if err != nil {
		return Pooled{}, err
	}
	allRows = allRows || data.RolesOnEveryRow(task)
	sepID := Separator(task)
	out := Pooled{Mean: make([][][][]float64, cfg.Layers), Sep: make([]bool, t), Scored: make([]bool, t)}
	for j := range t {
		out.Sep[j], out.Scored[j] = sepID != heads.NoSeparator, true
		for i := range n {
			tokens, _, mask := b.Row(i)
			out.Sep[j] = out.Sep[j] && tokens[j] == sepID
			out.Scored[j] = out.Scored[j] && mask[j] != 0
		}
	}
	toks, queries := make([][]int, n), make([][]float64, n)
	for i := range n {
		toks[i], _, queries[i] = b.Row(i)
		if allRows {
			queries[i] = nil
		}
	}
	if out.Roles, err = heads.Pool(att, toks, queries, heads.Options{Separator: sepID, Brackets: data.Brackets(task)}); err != nil {
		return Pooled{}, err
	}
	for l := range cfg.Layers {
		for h := range cfg.Heads {
			mean := make([][]float64, t)
			for q := range mean {
				mean[q] = make([]float64, t)
			}
			for i := range n {
				for q, row := range att[l][i][h] {
					for k, w := range row {
						mean[q][k] += w / float64(n)
					}
				}
			}
			out.Mean[l] = append(out.Mean[l], mean)
		}
	}
	return out, nil
}

// Run builds an inference graph for a (batch, t) input, runs it once and
// returns the attention weights [layer][batch][head][query][key] and the
// logits as a flat (batch*t*V) slice. A non-finite weight or logit is an
// error naming where it appears.
func Run(m *model.Model, batch, t int, tokens, targets []int, mask []float64) ([][][][][]float64, []float64, error) {
	g, err := model.Build(m, model.BuildOptions{Batch: batch, SeqLen: t})
	if err != nil {
		return nil, nil, errors.Wrap(err, "building the inference graph")
	}
	if err := g.Feed(tokens, targets, mask); err != nil {
		return nil, nil, err
	}
	vm := g.NewMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, nil, errors.Wrap(err, "running the model")
	}
	out, err := g.LogitsValue()
	if err != nil {
		return nil, nil, err
	}
	logits, err := model.Float64s(out)
	if err != nil {
		return nil, nil, errors.Wrap(err, "logits")
	}
	att, err := g.AttentionRows()
	if err != nil {
		return nil, nil, err
	}
	if err := checkFinite(m, att, logits, t); err != nil {
		return nil, nil, err
	}
	return att, logits, nil
}

// checkFinite refuses a pass with a NaN or infinite attention weight or
// logit, naming the first layer and head (then position) where one appears
// (model.NonFinite): every view of such a pass (heatmaps, scores, -json,
// -png, -html) would be blank or meaningless.
func checkFinite(m *model.Model, att [][][][][]float64, logits []float64, t int) error {
	for l, layer := range att {
		for b, example := range layer {
			for h, head := range example {
				for q, row := range head {
					for k, w := range row {
						if math.IsNaN(w) || math.IsInf(w, 0) {
							return model.NonFinite(m, fmt.Sprintf("layer %d head %d: attention weight (query %d, key %d) of example %d is %v", l, h, q, k, b, w))
						}
					}
				}
			}
		}
	}
	return model.CheckLogits(m, logits, func(row int) int { return row % t })
}

// Rows splits a flat (N, width) slice into N rows.
func Rows(flat []float64, width int) [][]float64 {
	out := make([][]float64, 0, len(flat)/width)
	for i := 0; i+width <= len(flat); i += width {
		out = append(out, flat[i:i+width])
	}
	return out
}

// defaultAblationExamples is the held-out set Ablate scores when the run
// config evaluates nothing (train.eval_size 0).
const defaultAblationExamples = 1000

// Ablate scores the run's held-out set (data.EvalSet of the run's seed and
// train.eval_size, evalSize) intact and with each head removed, and names
// each row's head by its role.
func Ablate(m *model.Model, task data.Task, evalSize int, seed uint64, mode ablation.Mode, roles [][]heads.Result) (*ablation.Table, error) {
	n := evalSize
	if n <= 0 {
		n = defaultAblationExamples
	}
	// train refuses a set beyond its memory limit, so only an edited
	// checkpoint asks for more; it must not be allocated.
	if need := float64(n) * float64(task.SeqLen()) * data.BytesPerPosition; need > model.MaxMemory {
		return nil, errors.Errorf("-ablate: the run's held-out set (train.eval_size = %d rows of %d positions) would take %.1f GiB (limit %.1f GiB)",
			n, task.SeqLen(), need/(1<<30), float64(model.MaxMemory)/(1<<30))
	}
	// The graph is train's evaluation graph (same chunks of the same set)
	// plus a head mask and fill per layer: refused up front when train's
	// estimate of it passes the limit.
	cfg := m.Config
	batch := model.EvalBatch(n)
	masks := 2 * float64(cfg.Layers) * float64(batch) * float64(cfg.DModel) * float64(task.SeqLen()) * 4
	if est := cfg.EstimateBytes(0, batch) + masks + float64(n)*float64(task.SeqLen())*data.BytesPerPosition; est > model.MaxMemory {
		return nil, errors.Errorf("-ablate: scoring the held-out set of %d rows in chunks of %d needs an estimated %.1f GiB (limit %.1f GiB)",
			n, batch, est/(1<<30), float64(model.MaxMemory)/(1<<30))
	}
	table, err := ablation.Run(m, data.EvalSet(task, n, seed), mode)
	if err != nil {
		return nil, err
	}
	for i, row := range table.Rows {
		table.Rows[i].Role = roles[row.Layer][row.Head].String()
	}
	return &table, nil
}

// Separator is the task's separator id ("SEP"), or heads.NoSeparator.
func Separator(task data.Task) int {
	if id, ok := data.Separator(task); ok {
		return id
	}
	return heads.NoSeparator
}

// runExamples draws n examples of task from seed (SamplesStream) and runs
// them once through a graph built with opts (its Batch and SeqLen set
// here). The graph's watched values stay readable until done is called.
func runExamples(m *model.Model, task data.Task, n int, seed uint64, opts model.BuildOptions) (b *data.Batch, g *model.Graph, done func(), err error) {
	t := task.SeqLen()
	b = data.NewBatch(n, t)
	if err := data.Fill(task, b, rand.New(rand.NewPCG(seed, SamplesStream))); err != nil {
		return nil, nil, nil, err
	}
	opts.Batch, opts.SeqLen = n, t
	if g, err = model.Build(m, opts); err != nil {
		return nil, nil, nil, errors.Wrap(err, "building the graph")
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return nil, nil, nil, err
	}
	vm := g.NewMachine()
	if err := vm.RunAll(); err != nil {
		vm.Close()
		return nil, nil, nil, errors.Wrap(err, "running the model")
	}
	return b, g, func() { vm.Close() }, nil
}
