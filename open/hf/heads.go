package hf

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// headDim is config.json's head_dim, hidden/heads when absent (the Phi-3
// and OLMo 2 attentions' getattr), as model.Config.HeadDim holds it: 0
// when it is hidden/heads.
func headDim(keys configKeys, hidden, heads int) (int, error) {
	width := 0
	if hidden%heads == 0 {
		width = hidden / heads
	}
	d, err := keys.size("head_dim", width)
	if err != nil {
		return 0, err
	}
	if d == 0 {
		return 0, errors.Errorf("hidden_size = %d is not divisible by num_attention_heads = %d, and head_dim is not given", hidden, heads)
	}
	if d == width {
		return 0, nil
	}
	return d, nil
}

// kvHeads is num_key_value_heads (null or absent: num_attention_heads, the
// Phi-3 and OLMo 2 classes' None) as model.Config.KVHeads holds it: 0 when
// every head has its own.
func kvHeads(keys configKeys, heads int) (int, error) {
	kv, err := keys.size("num_key_value_heads", heads)
	if err != nil {
		return 0, err
	}
	if heads%kv != 0 {
		return 0, errors.Errorf("num_key_value_heads = %d does not divide num_attention_heads = %d", kv, heads)
	}
	if kv == heads {
		return 0, nil
	}
	return kv, nil
}

// sizeKey is one size of a config.json: its key, the class's default, and
// where it goes.
type sizeKey struct {
	key  string
	def  int
	dest *int
	read func(key string, def int) (int, error)
}

// readSizeKeys reads each size into its destination.
func readSizeKeys(sizes []sizeKey) error {
	for _, s := range sizes {
		v, err := s.read(s.key, s.def)
		if err != nil {
			return err
		}
		*s.dest = v
	}
	return nil
}

// normEps is a norm's epsilon key (def when absent) as model.Config.NormEps
// holds it: 0 for model.DefaultNormEps.
func normEps(keys configKeys, key string, def float64) (float64, error) {
	eps, err := keys.number(key, def)
	if err != nil {
		return 0, err
	}
	if !(eps > 0 && eps < 1) {
		return 0, keys.wrongValue(key, "a number in (0, 1)")
	}
	if eps == model.DefaultNormEps {
		return 0, nil
	}
	return eps, nil
}
