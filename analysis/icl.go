package analysis

import (
	"math"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
)

// InContext is Olsson et al.'s in-context-learning score scaled to the
// induction task's short contexts: each scored prediction of the block's
// second copy (the token after the k-th symbol of the copy) is made twice
// in a sequence, once early, at the block's first occurrence, where nothing
// in the context predicts it, and once late, in the copy. Score is the mean
// cross-entropy late minus early: negative when the model learns from its
// context. The early loss can exceed ln V: a model trained on induction
// learns that the next symbol is one not seen yet, and is confidently wrong
// where the block begins.
type InContext struct {
	Early float64 `json:"early_loss"` // mean loss at the first occurrence's positions
	Late  float64 `json:"late_loss"`  // mean loss at the scored positions of the copy
	Score float64 `json:"score"`      // Late - Early
	Pairs int     `json:"pairs"`      // predictions averaged
}

// ICL computes InContext on the examples of a cached run of an induction
// task.
func ICL(c *Cache, task data.Task) (*InContext, error) {
	if !Repeats(task) {
		return nil, errors.Errorf("the in-context-learning score reads induction examples; the model's task is %s", task.Name())
	}
	b := c.Batch
	t := b.SeqLen
	loss := func(row, p int) float64 { // cross-entropy of position p's prediction of its target
		l := c.Logits.Row(row*t + p)
		top := slices.Max(l)
		var z float64
		for _, x := range l {
			z += math.Exp(x - top)
		}
		_, targets, _ := b.Row(row)
		return top + math.Log(z) - l[targets[p]]
	}
	var out InContext
	for r := range b.Size {
		tokens, targets, mask := b.Row(r)
		for p := range t {
			if mask[p] == 0 {
				continue
			}
			// The pair of the copy's symbol at p and its target occurred
			// first at q, in the earlier copy or before it (tokens drawn
			// with replacement may recur), where the context did not hold it.
			q := firstPair(tokens[:p], targets, tokens[p], targets[p])
			if q < 0 {
				return nil, errors.Errorf("example %d: scored position %d has no earlier occurrence followed by the same token", r, p)
			}
			out.Early += loss(r, q)
			out.Late += loss(r, p)
			out.Pairs++
		}
	}
	if out.Pairs == 0 {
		return nil, errors.New("no scored positions")
	}
	out.Early /= float64(out.Pairs)
	out.Late /= float64(out.Pairs)
	out.Score = out.Late - out.Early
	return &out, nil
}

// firstPair is the first position of tokens holding token followed by
// target, -1 when none does.
func firstPair(tokens, targets []int, token, target int) int {
	for q, id := range tokens {
		if id == token && targets[q] == target {
			return q
		}
	}
	return -1
}

// Repeats reports whether task's examples repeat a block of tokens and
// score its second copy (induction, and the repeated tokens a model trained
// elsewhere is scored on): what patching and the ICL score read.
func Repeats(task data.Task) bool {
	return task.Name() == "induction" || task.Name() == data.RepeatedTokensName
}
