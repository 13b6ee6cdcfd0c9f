package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/render/htmlview"
)

// Document is the -json object (and the page's "inspect" data): every key
// snake_case, names of things as values. Attention and logits are float32
// for a Float32 model so they print at float32 precision.
type Document struct {
	Checkpoint string   `json:"checkpoint"`
	Step       int      `json:"step"`
	Task       string   `json:"task"`
	Seed       uint64   `json:"seed"`
	Samples    int      `json:"samples"` // examples the head scores are pooled over
	Tokens     []int    `json:"tokens"`
	Labels     []string `json:"labels"`
	Targets    []*int   `json:"targets"`   // null where the position is not scored
	Attention  any      `json:"attention"` // [layer][head][query][key]
	Logits     any      `json:"logits,omitempty"`
	// Instead of Logits past MaxLogitValues logits, without AllLogits.
	htmlview.CutLogits
	Predictions []int              `json:"predictions"`
	Heads       [][]heads.Result   `json:"heads"`
	Ablation    *ablation.Table    `json:"ablation,omitempty"` // with Options.Ablate
	Circuits    *analysis.Circuits `json:"circuits,omitempty"` // with Options.Circuits
	// Blocks names the blocks' parts (model.Config.Blocks).
	Blocks string `json:"blocks"`
	// Family is the attention variant (model.Config.Family), omitted for
	// learned positions and full multi-head attention.
	Family string `json:"family,omitempty"`
	// KVHead [head] is the key-value head each query head reads (the same
	// in every layer), omitted when every query head has its own.
	KVHead []int `json:"kv_head,omitempty"`
}

// JSON is the -json document. Options.Layer and Head do not filter it, so
// indices always mean the model's own layer and head numbers.
func (r *Report) JSON() Document {
	s := r.Sequence
	j := Document{
		Checkpoint: r.Options.Checkpoint, Step: r.Step, Task: r.Task.Name(), Seed: r.Options.Seed, Samples: r.Options.Samples,
		Tokens: s.Tokens, Labels: labels(r.Task, s.Tokens), Targets: scoredTargets(s.Tokens, s.Targets, s.Scored),
		Predictions: r.Forward.Predictions, Heads: r.Pooled.Roles,
		Ablation: r.Ablation, Blocks: r.Config.Blocks(), Family: r.Config.Family(), Circuits: r.Circuits,
		KVHead: r.kvHeads(),
	}
	j.Attention, j.Logits, j.CutLogits = numbers(r.Dtype, r.Forward, r.Options.AllLogits)
	return j
}

// MaxLogitValues is the most logits the JSON document and the page carry
// for one sequence (positions x vocabulary) before they carry only each
// position's top LogitsTopK and its log-sum-exp: a 65536-symbol vocabulary
// would otherwise put millions of numbers in the output.
const (
	MaxLogitValues = 1 << 16
	LogitsTopK     = 16
)

// topLogit is one of a position's largest logits.
type topLogit struct {
	ID    int     `json:"id"`
	Logit float64 `json:"logit"`
}

// cutLogits reduces logits (position, vocab) when they exceed
// MaxLogitValues and all is false, else returns nil (keep them whole). It
// widens one row at a time.
func cutLogits(logits analysis.Logits, all bool) *htmlview.CutLogits {
	if all || len(logits.Shape) < 2 || logits.Shape[0]*logits.Shape[1] <= MaxLogitValues {
		return nil
	}
	v := logits.Shape[1]
	c := &htmlview.CutLogits{Note: fmt.Sprintf("the top %d of %d logits per position, with each position's log-sum-exp (logits_lse); -all-logits prints every one", LogitsTopK, v)}
	var tops [][]topLogit
	ids := make([]int, v)
	for p := range logits.Shape[0] {
		row := logits.Row(p)
		for i := range ids {
			ids[i] = i
		}
		// Larger first; the logits are finite (analysis checks every pass).
		slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(row[b], row[a]) })
		top := make([]topLogit, LogitsTopK)
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

// numbers is a pass's attention and logits as the JSON document holds
// them, float32 for a Float32 model; past MaxLogitValues (unless all) the
// logits are cut to each position's top ones.
func numbers(dtype tensor.Dtype, fw analysis.Pass, all bool) (attention, logits any, cut htmlview.CutLogits) {
	shape := fw.Attention.Shape
	att := make([][][][]float64, shape[0])
	for l := range att {
		for h := range shape[1] {
			att[l] = append(att[l], fw.Map(l, h))
		}
	}
	if c := cutLogits(fw.Logits, all); c != nil {
		cut = *c
	} else if dtype == tensor.Float32 {
		logits = fw.Logits.Float32Rows()
	} else {
		logits = fw.Logits.Matrix()
	}
	if dtype == tensor.Float32 {
		return attention32(att), logits, cut
	}
	return att, logits, cut
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
