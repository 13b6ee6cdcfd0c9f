package analysis

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
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
// brings back. When the corruption lowers that logit by less than
// MinPatchingFall (or not at all) there is nothing to restore and no share
// is defined: Undefined says why, and Restored and ByPosition are nil (null
// in JSON).
type Patching struct {
	// Examples is how many of the cache's examples are patched: the first
	// ones, as many as keep the patched forwards within MaxPerHeadTokens.
	Examples       int         `json:"examples"`
	CleanLogit     float64     `json:"clean_logit"`
	CorruptedLogit float64     `json:"corrupted_logit"`
	Undefined      string      `json:"undefined,omitempty"` // why no share is defined; "" when they are
	Restored       [][]float64 `json:"restored"`            // [layer][head]
	// Heads are the heads (layer, head) patched when not every one was
	// (inspect's -layer and -head): the others are 0 in Restored, null
	// in ByPosition.
	Heads      ablation.Heads `json:"heads,omitempty"`
	ByPosition [][][]float64  `json:"by_position"` // [layer][head][position]; nil past MaxPatchedPositions
}

// MinPatchingFall is the least fall of the correct token's logit that
// Patch shares out among the heads. Below it (an untrained model, or one
// that does not read the earlier copy) each share divides by noise: a fall
// of 0.008 gave shares of 53 and -52.
const MinPatchingFall = 0.1

// MaxPatchedPositions bounds the runs of patching one head at one position
// (heads x positions, each a forward of the examples): past it (a model of
// GPT-2's 144 heads) Patch leaves ByPosition nil and patches whole heads
// only.
const MaxPatchedPositions = 2048

// MaxPatchedFLOPs bounds the work of patching each head at each position
// alone (heads x positions forwards, ForwardFLOPs each): past it (a few
// heads of an 8B model, whose one forward of 8 examples is 12 TFLOP) Patch
// patches whole heads only, as past MaxPatchedPositions.
const MaxPatchedFLOPs = 10e12

// patchesPositions reports whether Patch patches each of heads heads at
// each of t positions alone, on n examples of cfg's model.
func patchesPositions(cfg model.Config, heads, n, t int) bool {
	return heads*t <= MaxPatchedPositions && float64(heads*t)*ForwardFLOPs(cfg, n*t, t) <= MaxPatchedFLOPs
}

// MaxPerHeadTokens bounds the tokens of the forwards an analysis runs once
// per head (patching, and ablation of a model trained elsewhere): heads x
// examples x positions. GPT-2 small's 144 heads on 8 examples of 101
// tokens are 116 thousand, each forward of 808 tokens about 200 GFLOP;
// past the bound fewer examples are used (at least one: GPT-2 small's 50
// scored positions of one example take 145 forwards of 25 GFLOP).
const MaxPerHeadTokens = 16384

// PerHeadExamples is how many of n examples of t positions an analysis
// that runs them once for each of heads heads uses: all of them, or as
// many as MaxPerHeadTokens allows, at least one.
func PerHeadExamples(heads, n, t int) int {
	return max(1, min(n, MaxPerHeadTokens/(heads*t)))
}

// CorruptionStream is the second PCG word of the fresh symbols Corruption
// draws: a stream of its own, so the corruption of a batch depends on its
// tokens and the seed only, never on what drew the batch.
const CorruptionStream uint64 = 0x636f_7272_0000_0000 // "corr" in the high bytes

// Corruption is the corrupted twin of the induction examples clean that
// Patch runs: every token that occurs twice in a row has its first
// occurrence replaced by a symbol the row does not hold, drawn from seed's
// CorruptionStream. The caller builds it from the examples it cached.
func Corruption(clean *data.Batch, vocab int, seed uint64) *data.Batch {
	return corrupted(clean, vocab, rand.New(rand.NewPCG(seed, CorruptionStream)))
}

// Patch runs activation patching on the induction examples of a cached
// run that kept every layer's head outputs (Circuit): the clean run is the
// cache, each patched run one more forward of corrupt, the cache's
// examples corrupted (Corruption of clean.Batch). It patches the heads hs
// names (nil: every head); the others' entries stay 0 in Restored and nil
// in ByPosition, and Heads lists the ones patched.
//
// progress, when not nil, hears the heads patched of the total.
func Patch(clean *Cache, task data.Task, corrupt *data.Batch, hs ablation.Heads, progress func(done, total int)) (*Patching, error) {
	if !Repeats(task) {
		return nil, errors.Errorf("activation patching corrupts induction examples; the model's task is %s", task.Name())
	}
	m := clean.Model
	cfg := m.Config
	t := clean.Batch.SeqLen
	if corrupt.Size != clean.Batch.Size || corrupt.SeqLen != t {
		return nil, errors.Errorf("activation patching: %d corrupted examples of %d positions for %d cached ones of %d", corrupt.Size, corrupt.SeqLen, clean.Batch.Size, t)
	}
	picked := hs
	hs = hs.Of(cfg)
	n := PerHeadExamples(len(hs), clean.Batch.Size, t)
	cb := clean.Batch.Head(n)
	corrupt = corrupt.Head(n)
	hooks := make([]string, cfg.Layers)
	cleanHeads := make([]Tensor, cfg.Layers) // (B, H, T, d): the first n examples are the patched batch's
	for l := range hooks {
		hooks[l] = model.HeadOut(l)
		y, err := clean.Get(hooks[l])
		if err != nil {
			return nil, errors.Wrap(err, "activation patching")
		}
		cleanHeads[l] = y
	}
	g, err := model.Build(m, model.BuildOptions{Batch: n, SeqLen: t, Hooks: hooks})
	if err != nil {
		return nil, errors.Wrap(err, "building the patching graph")
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	correctLogit := func(logit func(i int) float64) float64 {
		var sum, k float64
		for row, keep := range cb.Mask {
			if keep != 0 {
				sum += logit(row*cfg.Vocab + cb.Targets[row])
				k++
			}
		}
		return sum / k
	}
	run := func() (float64, error) {
		vm.Reset()
		if err := g.Feed(corrupt.Tokens, cb.Targets, cb.Mask); err != nil {
			return 0, err
		}
		if err := vm.RunAll(); err != nil {
			return 0, errors.Wrap(err, "running the model")
		}
		out, err := g.LogitsValue()
		if err != nil {
			return 0, err
		}
		switch logits := out.Data().(type) {
		case []float32:
			return correctLogit(func(i int) float64 { return float64(logits[i]) }), nil
		case []float64:
			return correctLogit(func(i int) float64 { return logits[i] }), nil
		}
		return 0, errors.Errorf("logits of type %T", out.Data())
	}
	p := &Patching{Examples: n, Heads: picked, CleanLogit: correctLogit(func(i int) float64 { return clean.Logits.At(i) })}
	if slices.Equal(corrupt.Tokens, cb.Tokens) {
		p.CorruptedLogit = p.CleanLogit
		p.Undefined = fmt.Sprintf("the examples hold every id of the vocabulary of %d, so none is left to corrupt them with", cfg.Vocab)
		return p, nil
	}
	if p.CorruptedLogit, err = run(); err != nil {
		return nil, err
	}
	gap := p.CleanLogit - p.CorruptedLogit
	switch {
	case gap == 0:
		p.Undefined = "corrupting the first copy leaves the correct token's logit where it was (the model does not read the earlier copy there), so there is no fall to restore"
		return p, nil
	case gap < MinPatchingFall:
		p.Undefined = fmt.Sprintf("corrupting the first copy moves the correct token's logit by %+.3g, less than a fall of %g (the model hardly reads the earlier copy there), so there is no fall to restore and shares of it would be noise",
			-gap, MinPatchingFall)
		return p, nil
	}
	share := func(l, h, pos int) (float64, error) {
		g.ResetHooks()
		iv, err := g.Hook(hooks[l])
		if err != nil {
			return 0, err
		}
		iv.ReplaceHead(h, pos, func(i int) float64 { return cleanHeads[l].At(i) })
		patched, err := run()
		return (patched - p.CorruptedLogit) / gap, err
	}
	byPosition := patchesPositions(cfg, len(hs), n, t)
	p.Restored = zeros[float64](cfg)
	if byPosition {
		p.ByPosition = zeros[[]float64](cfg)
	}
	for i, lh := range hs {
		if progress != nil {
			progress(i, len(hs))
		}
		l, h := lh[0], lh[1]
		if p.Restored[l][h], err = share(l, h, -1); err != nil {
			return nil, err
		}
		if !byPosition {
			continue
		}
		row := make([]float64, t)
		for pos := range t {
			if row[pos], err = share(l, h, pos); err != nil {
				return nil, err
			}
		}
		p.ByPosition[l][h] = row
	}
	if progress != nil {
		progress(len(hs), len(hs))
	}
	return p, nil
}

// zeros is a [layer][head] grid of cfg's shape, every entry zero.
func zeros[T any](cfg model.Config) [][]T {
	grid := make([][]T, cfg.Layers)
	for l := range grid {
		grid[l] = make([]T, cfg.Heads)
	}
	return grid
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
		first := map[int]int{}
		for i, tok := range tokens {
			if _, seen := first[tok]; !seen {
				first[tok] = i
			}
		}
		used := slices.Sorted(maps.Keys(first))
		for i, tok := range tokens {
			if j := first[tok]; j != i && len(used) < vocab { // tok repeats: replace its first occurrence
				fresh := data.DrawExcept(rng, vocab, used)
				at, _ := slices.BinarySearch(used, fresh)
				used = slices.Insert(used, at, fresh)
				tokens[j] = fresh
			}
		}
	}
	return out
}
