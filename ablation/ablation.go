package ablation

import (
	"cmp"
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// Mode is how a removed head's output is replaced.
type Mode string

const (
	Zero Mode = "zero" // by zeros
	Mean Mode = "mean" // by its mean output over the set, per position
)

// ParseMode reads "zero" or "mean".
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case Zero, Mean:
		return Mode(s), nil
	}
	return "", errors.Errorf("ablation mode %s: want %s or %s", msg.Quote(s), Zero, Mean)
}

// Score is a model's result on the set.
type Score struct {
	Loss       float64 `json:"loss"`
	TokenAcc   float64 `json:"token_acc"`
	ExactMatch float64 `json:"exact_match"`
}

// Row is the result with one head removed.
type Row struct {
	Layer int    `json:"layer"`
	Head  int    `json:"head"`
	Role  string `json:"role,omitempty"` // filled by the caller (package heads)
	Score
	DeltaLoss       float64 `json:"delta_loss"`        // Loss - intact Loss
	DeltaTokenAcc   float64 `json:"delta_token_acc"`   // TokenAcc - intact TokenAcc
	DeltaExactMatch float64 `json:"delta_exact_match"` // ExactMatch - intact ExactMatch
}

// Table is every head's ablation, most important first.
type Table struct {
	Mode     Mode  `json:"mode"`
	Examples int   `json:"examples"`
	Intact   Score `json:"intact"`
	Rows     []Row `json:"rows"`
}

// Heads lists the heads (layer, head) a per-head analysis runs on, in the
// order it runs them; nil is every head of the model, layer by layer.
type Heads [][2]int

// Of is the heads hs names in a model of cfg's shape: every one for nil.
func (hs Heads) Of(cfg model.Config) Heads {
	if hs != nil {
		return hs
	}
	all := make(Heads, 0, cfg.Layers*cfg.Heads)
	for l := range cfg.Layers {
		for h := range cfg.Heads {
			all = append(all, [2]int{l, h})
		}
	}
	return all
}

// Run scores m on set intact and with each head of hs (nil: every head)
// removed in turn. progress, when not nil, hears the heads done of the
// total after the intact run and after each head.
func Run(m *model.Model, set *data.Batch, mode Mode, hs Heads, progress func(done, total int)) (Table, error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return Table{}, err
	}
	if set.Size == 0 {
		return Table{}, errors.New("ablation: empty set")
	}
	r, err := newRunner(m, set)
	if err != nil {
		return Table{}, err
	}
	defer r.vm.Close()
	var fills [][][]float64 // [layer][head] (T*d), mean ablation only
	intact, err := r.score(func() error { r.g.ResetHooks(); return nil }, mode == Mean)
	if err != nil {
		return Table{}, err
	}
	if mode == Mean {
		fills = r.means
	}
	t := Table{Mode: mode, Examples: set.Size, Intact: intact}
	hs = hs.Of(m.Config)
	report := func() {
		if progress != nil {
			progress(len(t.Rows), len(hs))
		}
	}
	report()
	for _, lh := range hs {
		s, err := r.remove(lh[0], lh[1], fills)
		if err != nil {
			return Table{}, errors.Wrapf(err, "ablating layer %d head %d", lh[0], lh[1])
		}
		t.Rows = append(t.Rows, Row{Layer: lh[0], Head: lh[1], Score: s,
			DeltaLoss: s.Loss - intact.Loss, DeltaTokenAcc: s.TokenAcc - intact.TokenAcc, DeltaExactMatch: s.ExactMatch - intact.ExactMatch})
		report()
	}
	slices.SortStableFunc(t.Rows, func(a, b Row) int { return cmp.Compare(b.DeltaLoss, a.DeltaLoss) })
	return t, nil
}

// remove scores the set with head h of layer l removed: zeros, or its
// mean output when fills ([layer][head] (T*d)) holds the means.
func (r *runner) remove(l, h int, fills [][][]float64) (Score, error) {
	var fill []float64
	if fills != nil {
		fill = fills[l][h]
	}
	return r.score(func() error {
		r.g.ResetHooks()
		iv, err := r.g.Hook(model.HeadOut(l))
		if err != nil {
			return err
		}
		perRow := iv.Shape[2] * iv.Shape[3] // (T, d): the fill of one (row, head) block
		iv.ReplaceHead(h, -1, func(i int) float64 {
			if fill == nil {
				return 0
			}
			return fill[i%perRow]
		})
		return nil
	}, false)
}

// runner holds one graph of a chunk of the set, hooked on every layer's
// head outputs, and its machine.
type runner struct {
	g     *model.Graph
	vm    gorgonia.VM
	set   *data.Batch
	chunk *data.Batch
	means [][][]float64 // mean head outputs over the set, after a score with keepMeans
}

func newRunner(m *model.Model, set *data.Batch) (*runner, error) {
	size := model.EvalBatch(set.Size, set.SeqLen) // the chunks train's evaluation of the same set uses
	var heads []string
	for l := range m.Config.Layers {
		heads = append(heads, model.HeadOut(l))
	}
	g, err := model.Build(m, model.BuildOptions{Batch: size, SeqLen: set.SeqLen, Cache: heads, Hooks: heads})
	if err != nil {
		return nil, errors.Wrap(err, "ablation graph")
	}
	return &runner{g: g, vm: g.NewLeanMachine(), set: set, chunk: data.NewBatch(size, set.SeqLen)}, nil
}

// score sets the masks with setMasks before each chunk and scores the whole
// set. With keepMeans it also averages each head's output over the set's
// rows into r.means (padding rows of the last chunk left out).
func (r *runner) score(setMasks func() error, keepMeans bool) (Score, error) {
	set, chunk, t := r.set, r.chunk, r.set.SeqLen
	var lossSum, scored, correct float64
	var seqs, seqsRight int
	if keepMeans {
		r.means = nil
	}
	for lo := 0; lo < set.Size; lo += chunk.Size {
		// Padding rows repeat the set's first row and score nothing.
		rows := chunk.LoadChunk(set, lo)
		if err := setMasks(); err != nil {
			return Score{}, err
		}
		if err := r.g.Feed(chunk.Tokens, chunk.Targets, chunk.Mask); err != nil {
			return Score{}, err
		}
		r.vm.Reset()
		if err := r.vm.RunAll(); err != nil {
			return Score{}, errors.Wrap(err, "running the ablation graph")
		}
		n := 0.0
		for _, m := range chunk.Mask {
			n += m
		}
		if n > 0 {
			loss, err := r.g.LossValue()
			if err != nil {
				return Score{}, errors.Wrap(err, "ablation")
			}
			lossSum += loss * n
		}
		scored += n
		out, err := r.g.LogitsValue()
		if err != nil {
			return Score{}, errors.Wrap(err, "ablation")
		}
		logits, err := model.Float64s(out)
		if err != nil {
			return Score{}, err
		}
		v := len(logits) / (chunk.Size * t)
		for row := range rows {
			right, any := true, false
			for p := row * t; p < (row+1)*t; p++ {
				if chunk.Mask[p] == 0 {
					continue
				}
				any = true
				if model.Argmax(logits[p*v:(p+1)*v]) == chunk.Targets[p] {
					correct++
				} else {
					right = false
				}
			}
			if any {
				seqs++
				if right {
					seqsRight++
				}
			}
		}
		if keepMeans {
			if err := r.addMeans(rows, set.Size); err != nil {
				return Score{}, err
			}
		}
	}
	if scored == 0 || seqs == 0 {
		return Score{}, errors.New("ablation: the set scores no position")
	}
	return Score{Loss: lossSum / scored, TokenAcc: correct / scored, ExactMatch: float64(seqsRight) / float64(seqs)}, nil
}

// addMeans adds each head's output of the last run, averaged over its
// first rows rows and weighted by their share rows/total of the set, to
// r.means: [layer][head] (T*d) row-major (t, channel), the fill of mean
// ablation.
func (r *runner) addMeans(rows, total int) error {
	cfg := r.g.Model.Config
	if r.means == nil {
		r.means = make([][][]float64, cfg.Layers)
	}
	w := float64(rows) / float64(total)
	for l := range cfg.Layers {
		v, err := r.g.Activation(model.HeadOut(l))
		if err != nil {
			return err
		}
		y, err := model.Float64s(v)
		if err != nil {
			return err
		}
		block := len(y) / (r.chunk.Size * cfg.Heads) // (T, d)
		for h := range cfg.Heads {
			if len(r.means[l]) <= h {
				r.means[l] = append(r.means[l], make([]float64, block))
			}
			mean := make([]float64, block)
			for row := range rows {
				for i, x := range y[(row*cfg.Heads+h)*block:][:block] {
					mean[i] += x
				}
			}
			for i, x := range mean {
				r.means[l][h][i] += x / float64(rows) * w
			}
		}
	}
	return nil
}
