package analysis

import (
	"math/rand/v2"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// Patching is activation patching on induction examples: each clean example
// is corrupted by replacing the first occurrence of its repeated block with
// symbols that appear nowhere else, and each head's output is patched from
// the clean run into the corrupted one. Restored[l][h] is the share of the
// clean-minus-corrupted difference of the correct token's mean logit (over
// the scored positions) that patching head h of layer l at every position
// brings back; ByPosition[l][h][t] the share patching it at position t alone
// brings back.
type Patching struct {
	CleanLogit     float64       `json:"clean_logit"`
	CorruptedLogit float64       `json:"corrupted_logit"`
	Restored       [][]float64   `json:"restored"`    // [layer][head]
	ByPosition     [][][]float64 `json:"by_position"` // [layer][head][position]
}

// Patch runs activation patching for an induction task on n examples drawn
// from seed.
func Patch(m *model.Model, task data.Task, n int, seed uint64) (*Patching, error) {
	if task.Name() != "induction" {
		return nil, errors.Errorf("activation patching corrupts induction examples; the model's task is %s", task.Name())
	}
	cfg := m.Config
	t := task.SeqLen()
	clean := data.NewBatch(n, t)
	rng := rand.New(rand.NewPCG(seed, SamplesStream))
	if err := data.Fill(task, clean, rng); err != nil {
		return nil, err
	}
	corrupt := corrupted(clean, cfg.Vocab, rng)
	g, err := model.Build(m, model.BuildOptions{Batch: n, SeqLen: t, HeadMask: true})
	if err != nil {
		return nil, errors.Wrap(err, "building the patching graph")
	}
	vm := g.NewMachine()
	defer vm.Close()
	run := func(b *data.Batch) (float64, error) {
		vm.Reset()
		if err := g.Feed(b.Tokens, clean.Targets, clean.Mask); err != nil {
			return 0, err
		}
		if err := vm.RunAll(); err != nil {
			return 0, errors.Wrap(err, "running the model")
		}
		out, err := g.LogitsValue()
		if err != nil {
			return 0, err
		}
		logits, err := model.Float64s(out)
		if err != nil {
			return 0, err
		}
		var sum, k float64
		for row, keep := range clean.Mask {
			if keep != 0 {
				sum += logits[row*cfg.Vocab+clean.Targets[row]]
				k++
			}
		}
		return sum / k, nil
	}
	if err := g.ResetHeads(); err != nil {
		return nil, err
	}
	p := &Patching{}
	if p.CleanLogit, err = run(clean); err != nil {
		return nil, err
	}
	cleanHeads := make([][]float64, cfg.Layers)
	for l := range cleanHeads {
		y, err := g.HeadOutputsValue(l)
		if err != nil {
			return nil, err
		}
		if cleanHeads[l], err = model.Float64s(y); err != nil {
			return nil, err
		}
		cleanHeads[l] = append([]float64(nil), cleanHeads[l]...) // the next run reuses the buffer
	}
	if p.CorruptedLogit, err = run(corrupt); err != nil {
		return nil, err
	}
	gap := p.CleanLogit - p.CorruptedLogit
	if gap == 0 {
		return nil, errors.New("the corruption does not change the correct token's logit: nothing to restore")
	}
	share := func(l, h, pos int) (float64, error) {
		if err := g.ResetHeads(); err != nil {
			return 0, err
		}
		if err := g.PatchHead(l, h, pos, cleanHeads[l]); err != nil {
			return 0, err
		}
		patched, err := run(corrupt)
		return (patched - p.CorruptedLogit) / gap, err
	}
	p.Restored, p.ByPosition = make([][]float64, cfg.Layers), make([][][]float64, cfg.Layers)
	for l := range cfg.Layers {
		for h := range cfg.Heads {
			s, err := share(l, h, -1)
			if err != nil {
				return nil, err
			}
			p.Restored[l] = append(p.Restored[l], s)
			row := make([]float64, t)
			for pos := range t {
				if row[pos], err = share(l, h, pos); err != nil {
					return nil, err
				}
			}
			p.ByPosition[l] = append(p.ByPosition[l], row)
		}
	}
	return p, nil
}

// corrupted is a copy of clean whose every token that occurs twice in its
// row has its first occurrence replaced by a symbol the row does not hold:
// the earlier copy of the induction block is gone, the rest is the same.
func corrupted(clean *data.Batch, vocab int, rng *rand.Rand) *data.Batch {
	out := data.NewBatch(clean.Size, clean.SeqLen)
	copy(out.Tokens, clean.Tokens)
	copy(out.Targets, clean.Targets)
	copy(out.Mask, clean.Mask)
	for r := range clean.Size {
		tokens, _, _ := out.Row(r)
		used := map[int]bool{}
		first := map[int]int{}
		for i, tok := range tokens {
			used[tok] = true
			if _, seen := first[tok]; !seen {
				first[tok] = i
			}
		}
		for i, tok := range tokens {
			if j := first[tok]; j != i && len(used) < vocab { // tok repeats: replace its first occurrence
				fresh := rng.IntN(vocab)
				for used[fresh] {
					fresh = rng.IntN(vocab)
				}
				used[fresh] = true
				tokens[j] = fresh
			}
		}
	}
	return out
}
