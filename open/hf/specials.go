package hf

import (
	"encoding/json"
	"strconv"

	"github.com/pkg/errors"
)

// Specials are the special token ids config.json names: bos_token_id, and
// eos_token_id, one id or a list (Llama 3's instruct models end a turn
// with any of three). Absent keys take the config class's defaults.
type Specials struct {
	BOS int   // -1 for none
	EOS []int // empty for none
}

// readSpecials reads the special token ids, each a token of the model's
// vocab ids.
func readSpecials(keys configKeys, a architecture, vocab int) (Specials, error) {
	bos, err := tokenIDs(keys, "bos_token_id", a.bos, vocab)
	if err != nil {
		return Specials{}, err
	}
	eos, err := tokenIDs(keys, "eos_token_id", a.eos, vocab)
	if err != nil {
		return Specials{}, err
	}
	s := Specials{BOS: -1, EOS: eos}
	if len(bos) > 1 {
		return Specials{}, keys.wrongValue("bos_token_id", "one token id or null")
	}
	if len(bos) == 1 {
		s.BOS = bos[0]
	}
	return s, nil
}

// tokenIDs is key's ids: one id or a list of them, none for null; def
// when absent, none when def is -1 or outside a smaller vocabulary.
func tokenIDs(keys configKeys, key string, def, vocab int) ([]int, error) {
	raw, ok := keys[key]
	switch {
	case !ok && (def < 0 || def >= vocab):
		return nil, nil
	case !ok:
		return []int{def}, nil
	case string(raw) == "null":
		return nil, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err != nil {
		var id int
		if json.Unmarshal(raw, &id) != nil {
			return nil, keys.wrongValue(key, "a token id, a list of them, or null")
		}
		ids = []int{id}
	}
	for _, id := range ids {
		if id < 0 || id >= vocab {
			return nil, errors.Errorf("%s = %s: token %d is outside the vocabulary [0, %s)", key, shown(raw), id, strconv.Itoa(vocab))
		}
	}
	return ids, nil
}
