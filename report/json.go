package report

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/render/htmlview"
	"github.com/attnscope/attnscope/tokenizer"
)

// Document is the -json object (and the page's "inspect" data): every key
// snake_case, names of things as values. Attention and logits are float32
// for a Float32 model so they print at float32 precision. Every field
// indexed by head ([layer][head] grids, kv_head, the circuits' and the
// ablation's records) holds the heads Selection names; docs/json.md lists
// every key.
type Document struct {
	Checkpoint string `json:"checkpoint"`
	Step       int    `json:"step"`
	// Task is what ran: the task whose examples the heads were scored on,
	// or TextGiven / TokensGiven for a model trained elsewhere run on the
	// sequence a user gave.
	Task      string    `json:"task"`
	Seed      uint64    `json:"seed"`
	Samples   int       `json:"samples"` // examples the head scores are pooled over
	Selection Selection `json:"selection"`
	Tokens    []int     `json:"tokens"`
	Labels    []string  `json:"labels"` // each token as the views show it ("␣cat")
	// Texts are each token's raw text, for a model that reads text (absent
	// for a toy task, whose tokens are their labels, and a model opened on
	// token ids); Bytes [position] holds a token's bytes where they are not
	// valid UTF-8 (its text then has U+FFFD for each bad byte), null
	// elsewhere, and is absent when every token is valid.
	Texts     []string `json:"texts,omitempty"`
	Bytes     [][]int  `json:"bytes,omitempty"`
	Targets   []*int   `json:"targets"`   // null where the position is not scored
	Attention any      `json:"attention"` // [layer][head][query][key], of Selection
	Logits    any      `json:"logits,omitempty"`
	// Instead of Logits past MaxLogitValues logits, without AllLogits.
	htmlview.CutLogits
	Predictions []int              `json:"predictions"`
	Heads       [][]heads.Result   `json:"heads"`
	Ablation    *ablation.Table    `json:"ablation,omitempty"` // with Options.Ablate
	Circuits    *analysis.Circuits `json:"circuits,omitempty"` // with Options.Circuits
	Patching    *Patching          `json:"patching,omitempty"` // with Options.Patch
	// Blocks names the blocks' parts (model.Config.Blocks).
	Blocks string `json:"blocks"`
	// Family is the attention variant (model.Config.Family), omitted for
	// learned positions and full multi-head attention.
	Family string `json:"family,omitempty"`
	// KVHead [head] is the key-value head each query head of Selection
	// reads (the same in every layer), omitted when every query head has
	// its own.
	KVHead []int `json:"kv_head,omitempty"`
	// LayerKinds [layer] says which layers of Selection are "local"
	// (windowed) and which "global" in a local/global model
	// (model.Config.GlobalLayers), omitted when every layer is alike.
	LayerKinds []string `json:"layer_kinds,omitempty"`
}

// TextGiven and TokensGiven are Document.Task for a model trained
// elsewhere run on -text or -tokens: its heads were scored on that
// sequence, not on repeated tokens.
const (
	TextGiven   = "text given"
	TokensGiven = "tokens given"
)

// Selection is the model's layer and head numbers a document holds: a
// [layer][head] grid's [i][j] is layer Layers[i], head Heads[j]; records
// that name a head ({layer, head}) keep the model's numbers.
type Selection struct {
	Layers []int `json:"layers"`
	Heads  []int `json:"heads"`
}

// holds reports whether the selection holds head h of layer l.
func (s Selection) holds(l, h int) bool {
	return slices.Contains(s.Layers, l) && slices.Contains(s.Heads, h)
}

// every is the selection of every head of a model of layers x heads.
func every(layers, heads int) Selection {
	s := Selection{}
	for l := range layers {
		s.Layers = append(s.Layers, l)
	}
	for h := range heads {
		s.Heads = append(s.Heads, h)
	}
	return s
}

// JSON is the -json document of the heads Options.Layers and Heads pick
// (by default every head: the views' one-layer default is for a
// terminal).
func (r *Report) JSON() Document {
	return r.document(r.picked())
}

// picked is the selection Options.Layers and Heads pick, every head by
// default.
func (r *Report) picked() Selection {
	o := r.Options
	return Selection{Layers: o.Layers.of(r.Config.Layers), Heads: o.Heads.of(r.Config.Heads)}
}

// document is the JSON document of the heads s holds.
func (r *Report) document(sel Selection) Document {
	s := r.Sequence
	j := Document{
		Checkpoint: r.Options.Checkpoint, Step: r.Step, Task: r.ranTask(), Seed: r.Options.Seed, Samples: r.Options.Samples,
		Selection: sel, Tokens: s.Tokens, Labels: labels(r.Task, s.Tokens), Targets: scoredTargets(s.Tokens, s.Targets, s.Scored),
		Predictions: r.Forward.Predictions, Heads: pick(r.Pooled.Roles, sel),
		Ablation: selectAblation(r.Ablation, sel), Blocks: r.Config.Blocks(), Family: r.Config.Family(), Circuits: selectCircuits(r.Circuits, sel),
		Patching: selectPatching(r.Patching, sel),
		KVHead:   selectHeads(r.kvHeads(), sel), LayerKinds: layerKinds(r.Config, sel.Layers),
	}
	if r.RolesOnSequence {
		j.Samples = 1
	}
	j.Texts, j.Bytes = tokenTexts(r.tok, s.Tokens)
	j.Attention, j.Logits, j.CutLogits = selectedNumbers(r.Dtype, r.Forward, r.Options.AllLogits, sel)
	return j
}

// ranTask is what the heads were scored on (Document.Task).
func (r *Report) ranTask() string {
	switch {
	case !r.RolesOnGiven:
		return r.Task.Name()
	case r.Options.Text != "":
		return TextGiven
	default:
		return TokensGiven
	}
}

// tokenTexts is each token's raw text in tok and, where it is not valid
// UTF-8, its bytes (see Document.Texts); nil, nil for a model without
// text: a toy task (tok nil) or one opened on token ids, whose Encode
// refuses every text.
func tokenTexts(tok tokenizer.Tokenizer, ids []int) (texts []string, raw [][]int) {
	if tok == nil {
		return nil, nil
	}
	if _, err := tok.Encode(""); errors.Is(err, tokenizer.ErrNoTokenizer) {
		return nil, nil
	}
	invalid := false
	raw = make([][]int, len(ids))
	for i, id := range ids {
		b := tok.Token(id)
		texts = append(texts, strings.ToValidUTF8(string(b), "\uFFFD"))
		if !utf8.Valid(b) {
			invalid = true
			for _, c := range b {
				raw[i] = append(raw[i], int(c))
			}
		}
	}
	if !invalid {
		raw = nil
	}
	return texts, raw
}

// pick is the cells of a [layer][head] grid that sel holds, in its order;
// nil for nil (a measure left undefined stays null).
func pick[T any](grid [][]T, sel Selection) [][]T {
	if grid == nil {
		return nil
	}
	out := make([][]T, len(sel.Layers))
	for i, l := range sel.Layers {
		for _, h := range sel.Heads {
			out[i] = append(out[i], grid[l][h])
		}
	}
	return out
}

// selectHeads is the entries of a [head] list that sel holds; nil for nil.
func selectHeads(perHead []int, sel Selection) []int {
	if perHead == nil {
		return nil
	}
	out := make([]int, 0, len(sel.Heads))
	for _, h := range sel.Heads {
		out = append(out, perHead[h])
	}
	return out
}

// selectCircuits is c with its per-head measures cut to sel: the grids
// picked, the copying records of the heads it holds, the compositions with
// a head it holds at either end. Measures of the whole model (the ICL
// score, the logit lens, the direct attribution's embeddings, MLPs and
// biases) stay.
func selectCircuits(c *analysis.Circuits, sel Selection) *analysis.Circuits {
	if c == nil {
		return nil
	}
	out := *c
	out.PrefixMatching = pick(c.PrefixMatching, sel)
	out.Copying = slices.DeleteFunc(slices.Clone(c.Copying), func(x analysis.Copying) bool { return !sel.holds(x.Layer, x.Head) })
	out.Composition = slices.DeleteFunc(slices.Clone(c.Composition), func(x analysis.Composition) bool {
		return !sel.holds(x.From[0], x.From[1]) && !sel.holds(x.To[0], x.To[1])
	})
	if c.DirectLogit != nil {
		d := *c.DirectLogit
		d.Heads, d.TopTokens = pick(d.Heads, sel), pick(d.TopTokens, sel)
		out.DirectLogit = &d
	}
	if c.Patching != nil {
		p := *c.Patching
		p.Restored, p.ByPosition = pick(p.Restored, sel), pick(p.ByPosition, sel)
		out.Patching = &p
	}
	return &out
}

// selectAblation is t with the rows of the heads sel holds.
func selectAblation(t *ablation.Table, sel Selection) *ablation.Table {
	if t == nil {
		return nil
	}
	out := *t
	out.Rows = slices.DeleteFunc(slices.Clone(t.Rows), func(row ablation.Row) bool { return !sel.holds(row.Layer, row.Head) })
	return &out
}

// MaxLogitValues is the most logits the JSON document and the page carry
// for one sequence (positions x vocabulary) before they carry only each
// position's top LogitsTopK and its log-sum-exp: a 65536-symbol vocabulary
// would otherwise put millions of numbers in the output.
const (
	MaxLogitValues = 1 << 16
	LogitsTopK     = 16
)

// cutLogits reduces logits (position, vocab) when they exceed
// MaxLogitValues and all is false, else returns nil (keep them whole). It
// widens one row at a time.
func cutLogits(logits analysis.Logits, all bool) *htmlview.CutLogits {
	if all || len(logits.Shape) < 2 || logits.Shape[0]*logits.Shape[1] <= MaxLogitValues {
		return nil
	}
	v := logits.Shape[1]
	c := &htmlview.CutLogits{Cut: &htmlview.LogitsCut{TopK: LogitsTopK, Vocab: v, Positions: logits.Shape[0], Limit: MaxLogitValues}}
	var tops [][]htmlview.TopLogit
	ids := make([]int, v)
	for p := range logits.Shape[0] {
		row := logits.Row(p)
		for i := range ids {
			ids[i] = i
		}
		// Larger first; the logits are finite (analysis checks every pass).
		slices.SortStableFunc(ids, func(a, b int) int { return cmp.Compare(row[b], row[a]) })
		top := make([]htmlview.TopLogit, LogitsTopK)
		for k := range top {
			top[k] = htmlview.TopLogit{ID: ids[k], Logit: row[ids[k]]}
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

// numbers is a pass's attention of every head and its logits as the JSON
// document holds them (selectedNumbers).
func numbers(dtype tensor.Dtype, fw analysis.Pass, all bool) (attention, logits any, cut htmlview.CutLogits) {
	shape := fw.Attention.Shape
	return selectedNumbers(dtype, fw, all, every(shape[0], shape[1]))
}

// selectedNumbers is a pass's attention of the heads sel holds and its
// logits as the JSON document holds them, float32 for a Float32 model;
// past MaxLogitValues (unless all) the logits are cut to each position's
// top ones.
func selectedNumbers(dtype tensor.Dtype, fw analysis.Pass, all bool, sel Selection) (attention, logits any, cut htmlview.CutLogits) {
	att := make([][][][]float64, len(sel.Layers))
	for i, l := range sel.Layers {
		for _, h := range sel.Heads {
			att[i] = append(att[i], fw.Map(l, h))
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
