package analysis

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// ForwardTokens runs the model on one sequence of token ids alone, as a
// program reading a model trained elsewhere has them (its tokenizer's
// Encode): the attention of every head, the logits and the predictions at
// every position. Each position's target is the next token (the last has
// none), so a Pass needs nothing else.
func ForwardTokens(m *model.Model, tokens []int) (Pass, error) {
	c, err := RunTokensWithCache(m, [][]int{tokens}, Weights(m)...)
	if err != nil {
		return Pass{}, err
	}
	return c.Pass(0)
}

// RunTokensWithCache is RunWithCache on sequences of token ids alone, all
// of one length: the batch's targets are each position's next token,
// scored at every position that has one (the analyses that read targets,
// such as LogitLens, score next-token prediction). The sequences are
// checked before a graph is built: at least one, none empty, every id in
// the vocabulary, no longer than a learned position table, and a batch
// that fits in memory (model.MaxMemory).
func RunTokensWithCache(m *model.Model, seqs [][]int, names ...string) (*Cache, error) {
	if err := checkSequences(m.Config, seqs); err != nil {
		return nil, err
	}
	return RunWithCache(m, tokenBatch(seqs), names...)
}

// RunTokensWithHooks is RunWithHooks on sequences of token ids alone, as
// RunTokensWithCache takes them.
func RunTokensWithHooks(m *model.Model, seqs [][]int, hooks []Hook, names ...string) (*Cache, error) {
	if err := checkSequences(m.Config, seqs); err != nil {
		return nil, err
	}
	return RunWithHooks(m, tokenBatch(seqs), hooks, names...)
}

// checkSequences refuses sequences a forward cannot run, naming the
// sequence and position at fault.
func checkSequences(cfg model.Config, seqs [][]int) error {
	if len(seqs) == 0 {
		return errors.New("no sequences: give at least one of at least one token")
	}
	t := len(seqs[0])
	if t == 0 {
		return errors.New("sequence 0 is empty: give at least one token")
	}
	if limit := cfg.MaxLength(); limit > 0 && t > limit {
		return errors.Errorf("%d tokens is longer than the model's context of %d (learned positions)", t, limit)
	}
	at := cfg
	at.Context = t
	if err := model.CheckMemory(at.InferenceBytes(len(seqs)), fmt.Sprintf("a forward of %d sequences of %d tokens", len(seqs), t), "give fewer or shorter sequences"); err != nil {
		return err
	}
	for i, seq := range seqs {
		if len(seq) != t {
			return errors.Errorf("sequence %d has %d tokens, sequence 0 %d: every sequence of one run has the same length", i, len(seq), t)
		}
		for p, id := range seq {
			if id < 0 || id >= cfg.Vocab {
				return errors.Errorf("sequence %d: token %d at position %d is outside the vocabulary [0, %d)", i, id, p, cfg.Vocab)
			}
		}
	}
	return nil
}

// tokenBatch is the batch of checked sequences, each position's target the
// next token and scored; the last position's target (none) is id 0,
// unscored.
func tokenBatch(seqs [][]int) *data.Batch {
	t := len(seqs[0])
	b := data.NewBatch(len(seqs), t)
	for i, seq := range seqs {
		tokens, targets, mask := b.Row(i)
		copy(tokens, seq)
		for p := range t - 1 {
			targets[p], mask[p] = seq[p+1], 1
		}
	}
	return b
}
