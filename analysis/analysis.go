package analysis

import (
	"fmt"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
)

// Pass is what one forward pass over one sequence gives.
type Pass struct {
	Attention   Tensor // (L, H, T, T): every layer's weights, rows = queries, in the model's dtype
	Logits      Logits // (T, V)
	Predictions []int  // [position] argmax of the logits
}

// Map is head h of layer l's (T, T) weights, rows = queries (float64
// copies of a float32 model's).
func (p Pass) Map(l, h int) [][]float64 { return p.Attention.Matrix(l, h) }

// Forward runs the model on one sequence (an inference graph with Batch 1):
// tokens, their next-token targets and the scored mask, each of length T.
// ForwardTokens takes the tokens alone.
func Forward(m *model.Model, tokens, targets []int, scored []float64) (Pass, error) {
	b := &data.Batch{Size: 1, SeqLen: len(tokens), Tokens: tokens, Targets: targets, Mask: scored}
	c, err := RunWithCache(m, b, Weights(m)...)
	if err != nil {
		return Pass{}, err
	}
	return c.Pass(0)
}

// Pass is example i of the cached run as one sequence's pass (its
// attention weights must have been kept).
func (c *Cache) Pass(i int) (Pass, error) {
	t := c.Batch.SeqLen
	p := Pass{Logits: c.Logits.rows(i*t, (i+1)*t)}
	var err error
	if p.Attention, err = c.exampleWeights(i); err != nil {
		return Pass{}, err
	}
	p.Predictions = p.Logits.predictions()
	return p, nil
}

// exampleWeights is example i's attention weights, (L, H, T, T): c.weights
// itself for a run of one example (shared, not copied), else a copy, in
// the model's dtype.
func (c *Cache) exampleWeights(i int) (Tensor, error) {
	cfg, t := c.Model.Config, c.Batch.SeqLen
	shape := []int{cfg.Layers, cfg.Heads, t, t}
	if c.weights.Len() > 0 && c.Batch.Size == 1 {
		return c.weights.span(0, c.weights.Len(), shape), nil
	}
	out := zeroTensor(c.Model.Dtype, shape)
	for l := range cfg.Layers {
		att, err := c.Get(model.AttnWeights(l))
		if err != nil {
			return Tensor{}, err
		}
		out.sub(l).copyIn(att.sub(i))
	}
	return out, nil
}

// Pooled is what n examples of a task give: every head's role and its
// attention averaged over the examples.
type Pooled struct {
	Roles  [][]heads.Result // [layer][head]
	Mean   Tensor           // (L, H, T, T): each head's weights averaged over the examples, in the model's dtype
	Sep    []bool           // positions that hold the separator in every example
	Scored []bool           // positions every example scores (the task's mask)
}

// ScoreHeads pools every head's pattern scores over the examples of a
// cached run (its attention weights kept) of the model's task: over the
// query rows the task scores, or over every row when allRows is set or the
// task asks for it (data.RolesOnEveryRow). It also averages each head's
// weights.
func ScoreHeads(c *Cache, task data.Task, allRows bool) (Pooled, error) {
	cfg, b := c.Model.Config, c.Batch
	n, t := b.Size, b.SeqLen
	maps := make([]Tensor, cfg.Layers)
	for l := range maps {
		var err error
		if maps[l], err = c.Get(model.AttnWeights(l)); err != nil {
			return Pooled{}, err
		}
	}
	allRows = allRows || data.RolesOnEveryRow(task)
	sepID := Separator(task)
	out := Pooled{Sep: make([]bool, t), Scored: make([]bool, t)}
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
	weights := func(l, row, h int) [][]float64 { return maps[l].Matrix(row, h) }
	var err error
	if out.Roles, err = heads.Pool(weights, cfg.Layers, cfg.Heads, toks, queries, heads.Options{Separator: sepID, Brackets: data.Brackets(task)}); err != nil {
		return Pooled{}, err
	}
	if out.Mean, err = meanWeights(c, maps); err != nil {
		return Pooled{}, err
	}
	return out, nil
}

// meanWeights is each head's weights averaged over the examples of c,
// (L, H, T, T) in the model's dtype, summed in float64 (maps: every
// layer's weights). The mean over one example is its weights, shared
// rather than copied (38 MB at GPT-2 small's size over 256 tokens).
func meanWeights(c *Cache, maps []Tensor) (Tensor, error) {
	cfg, n, t := c.Model.Config, c.Batch.Size, c.Batch.SeqLen
	if n == 1 {
		return c.exampleWeights(0)
	}
	mean := make([]float64, cfg.Layers*cfg.Heads*t*t) // (L, H, T, T)
	for l := range cfg.Layers {
		for h := range cfg.Heads {
			at := mean[(l*cfg.Heads+h)*t*t:][:t*t]
			for i := range n {
				for k, w := range maps[l].Block(i, h) {
					at[k] += w / float64(n)
				}
			}
		}
	}
	return newTensor(c.Model.Dtype, []int{cfg.Layers, cfg.Heads, t, t}, mean), nil
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

// AblationSetSize is the held-out set Ablate scores for a run config's
// train.eval_size: itself, or defaultAblationExamples for 0.
func AblationSetSize(evalSize int) int {
	if evalSize <= 0 {
		return defaultAblationExamples
	}
	return evalSize
}

// Ablate scores the run's held-out set (data.EvalSet of the run's seed and
// train.eval_size, evalSize) intact and with each head removed, and names
// each row's head by its role. It removes the heads hs names (nil: every
// head). progress, when not nil, hears the heads done of the total
// (ablation.Run).
func Ablate(m *model.Model, task data.Task, evalSize int, seed uint64, mode ablation.Mode, hs ablation.Heads, roles [][]heads.Result, progress func(done, total int)) (*ablation.Table, error) {
	n := AblationSetSize(evalSize)
	// train refuses a set beyond its memory limit, so only an edited
	// checkpoint asks for more; it must not be allocated.
	set := float64(n) * float64(task.SeqLen()) * data.BytesPerPosition
	if err := model.CheckMemory(set, fmt.Sprintf("-ablate: the run's held-out set (train.eval_size = %d rows of %d positions)", n, task.SeqLen()),
		"the checkpoint's train.eval_size is beyond what train allows"); err != nil {
		return nil, err
	}
	// The graph is train's evaluation graph (same chunks of the same set)
	// plus a hook's mask and fill per layer: refused up front when train's
	// estimate of it passes the limit.
	cfg := m.Config
	cfg.Context = task.SeqLen() // the graph's length: a model trained elsewhere has a longer context
	batch := model.EvalBatch(n, task.SeqLen())
	hooks := 2 * float64(cfg.Layers) * float64(batch) * float64(cfg.DModel) * float64(task.SeqLen()) * 4
	if err := model.CheckMemory(cfg.EstimateBytes(0, batch)+hooks+set, fmt.Sprintf("-ablate: scoring the held-out set of %d rows in chunks of %d", n, batch),
		"the model is too large to ablate here"); err != nil {
		return nil, err
	}
	return AblateOn(m, data.EvalSet(task, n, seed), mode, hs, roles, progress)
}

// AblateOn is Ablate on a set of the caller's (the sequence a user gave a
// model trained elsewhere), scored where its mask says.
func AblateOn(m *model.Model, set *data.Batch, mode ablation.Mode, hs ablation.Heads, roles [][]heads.Result, progress func(done, total int)) (*ablation.Table, error) {
	table, err := ablation.Run(m, set, mode, hs, progress)
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
