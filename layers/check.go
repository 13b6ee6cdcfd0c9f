package layers

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/ops"
)

// CheckOptions is the one place the attention family's rules on sizes and
// combinations live: d divisible by heads, kv heads dividing heads, a
// window of 0 or more, a head_dim of 0 or more, rotary frequencies finite,
// positive and at most d/2 of them, a latent of width 0 or more with one key and value per head, no
// rotary positions and no QK-norm, and the scores' scale and soft-cap
// (checkScores). latent is the latent's width r (0:
// none). key names each setting in the message: the layers name them as
// their options do ("kv_heads"), a model config as its keys
// ("model.kv_heads").
func CheckOptions(d, heads, latent int, o AttentionOptions, key func(string) string) error {
	switch {
	case heads <= 0:
		return errors.Errorf("%s = %d: must be positive", key("heads"), heads)
	case o.HeadDim < 0:
		return errors.Errorf("%s = %d: must be 0 (d_model/heads) or positive", key("head_dim"), o.HeadDim)
	case o.HeadDim == 0 && d%heads != 0:
		return errors.Errorf("%s = %d is not divisible by %s = %d", key("d_model"), d, key("heads"), heads)
	case o.KVHeads < 0 || o.KVHeads > 0 && heads%o.KVHeads != 0:
		return errors.Errorf("%s = %d must divide %s = %d", key("kv_heads"), o.KVHeads, key("heads"), heads)
	case o.Window < 0:
		return errors.Errorf("%s = %d: must be 0 (full) or positive", key("window"), o.Window)
	case len(o.RotaryFreqs) > 0 && ops.CheckFrequencies(o.RotaryFreqs, o.headDim(d, heads)) != nil:
		return errors.Wrapf(ops.CheckFrequencies(o.RotaryFreqs, o.headDim(d, heads)), "%s = rope", key("position"))
	case latent > 0 && o.HeadDim != 0:
		return errors.Errorf("%s = %d with %s = %d: latent attention's heads are d_model/heads wide", key("head_dim"), o.HeadDim, key("kv_latent"), latent)
	case latent < 0:
		return errors.Errorf("%s = %d: must be 0 (none) or positive", key("kv_latent"), latent)
	case latent > 0 && o.KVHeads != 0 && o.KVHeads != heads:
		return errors.Errorf("%s = %d with %s = %d: latent attention up-projects one key and value per head; leave kv_heads unset", key("kv_latent"), latent, key("kv_heads"), o.KVHeads)
	case latent > 0 && o.QKNorm != nil:
		return errors.Errorf("%s = true with %s = %d: QK-norm of a latent's keys is not built", key("qk_norm"), key("kv_latent"), latent)
	case latent > 0 && len(o.RotaryFreqs) != 0:
		return errors.Errorf("%s = %d with %s = rope: rotary keys need DeepSeek's decoupled rotary key, which is not built; use alibi, learned, sinusoidal or none", key("kv_latent"), latent, key("position"))
	}
	return checkScores(o, key)
}

// optionName is how the layers name a setting in CheckOptions' messages.
func optionName(field string) string { return field }
