package data

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/tokenizer"
)

// NewTokenText is the text task of cfg read through tok, a pretrained
// model's tokenizer, for a model of vocab ids (at least tok.Size()): the
// file (TextLocation, checked against cfg.File when recorded) is encoded
// whole, windows of cfg.Length tokens are drawn from its first 90% for
// training and its last 10% for the held-out set, every position scored,
// as the character-level task. cfg.Chars must be empty: the ids are the
// tokenizer's.
func NewTokenText(cfg TaskConfig, tok tokenizer.Tokenizer, vocab int) (Task, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Name != Text:
		return nil, errors.Errorf("task.name = %s: a tokenizer reads only the text task", cfg.Name)
	case cfg.Chars != "":
		return nil, errors.New("task.chars: a text read through a tokenizer has no characters of its own")
	case tok.Size() > vocab:
		return nil, errors.Errorf("the tokenizer %s has %d tokens, more than the model's vocabulary of %d", tok.Name(), tok.Size(), vocab)
	}
	key := textKey(cfg)
	src, err := safefile.ReadLimit(TextLocation(cfg), MaxTextBytes, "the text task reads")
	if err != nil {
		return nil, errors.Wrapf(err, "%s: reading the text", key)
	}
	sum := sha256.Sum256(src)
	if err := checkRecord(key, cfg.File, int64(len(src)), hex.EncodeToString(sum[:])); err != nil {
		return nil, err
	}
	ids, err := tok.Encode(string(src))
	if err != nil {
		return nil, errors.Wrapf(err, "%s: tokenizing with %s", key, tok.Name())
	}
	if slices.ContainsFunc(ids, func(id int) bool { return id < 0 || id >= vocab }) {
		return nil, errors.Errorf("%s: the tokenizer %s gave an id outside the model's vocabulary of %d", key, tok.Name(), vocab)
	}
	split, err := splitText(key, len(ids), cfg.Length, "tokens")
	if err != nil {
		return nil, err
	}
	return textTask{length: cfg.Length, ids: ids, split: split, tok: tok, vocab: vocab}, nil
}
