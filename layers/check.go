package layers

import (
	"math"

	"github.com/pkg/errors"
)

// CheckOptions is the one place the attention family's rules on sizes and
// combinations live: d divisible by heads, kv heads dividing heads, a
// window of 0 or more, a rotary base finite and above 1 on an even head
// size, a latent of width 0 or more with one key and value per head, no
// rotary positions and no QK-norm, and the scores' scale and soft-cap
// (checkScores). latent is the latent's width r (0:
// none). key names each setting in the message: the layers name them as
// their options do ("kv_heads"), a model config as its keys
// ("model.kv_heads").
func CheckOptions(d, heads, latent int, o AttentionOptions, key func(string) string) error {
	switch {
	case heads <= 0:
		return errors.Errorf("%s = %d: must be positive", key("heads"), heads)
	case d%heads != 0:
		return errors.Errorf("%s = %d is not divisible by %s = %d", key("d_model"), d, key("heads"), heads)
	case o.KVHeads < 0 || o.KVHeads > 0 && heads%o.KVHeads != 0:
		return errors.Errorf("%s = %d must divide %s = %d", key("kv_heads"), o.KVHeads, key("heads"), heads)
	case o.Window < 0:
		return errors.Errorf("%s = %d: must be 0 (full) or positive", key("window"), o.Window)
	case o.RotaryBase < 0 || o.RotaryBase > 0 && (o.RotaryBase <= 1 || math.IsInf(o.RotaryBase, 0)):
		return errors.Errorf("%s = %v: must be finite and > 1", key("rope_base"), o.RotaryBase)
	case o.RotaryBase > 0 && (d/heads)%2 != 0:
		return errors.Errorf("%s = rope needs an even head size (channel i pairs with i+d/2): d_model %d / heads %d = %d", key("position"), d, heads, d/heads)
	case latent < 0:
		return errors.Errorf("%s = %d: must be 0 (none) or positive", key("kv_latent"), latent)
	case latent > 0 && o.KVHeads != 0 && o.KVHeads != heads:
		return errors.Errorf("%s = %d with %s = %d: latent attention up-projects one key and value per head; leave kv_heads unset", key("kv_latent"), latent, key("kv_heads"), o.KVHeads)
	case latent > 0 && o.QKNorm != nil:
		return errors.Errorf("%s = true with %s = %d: QK-norm of a latent's keys is not built", key("qk_norm"), key("kv_latent"), latent)
	case latent > 0 && o.RotaryBase != 0:
		return errors.Errorf("%s = %d with %s = rope: rotary keys need DeepSeek's decoupled rotary key, which is not built; use alibi, learned, sinusoidal or none", key("kv_latent"), latent, key("position"))
	}
	return checkScores(o, key)
}

// optionName is how the layers name a setting in CheckOptions' messages.
func optionName(field string) string { return field }
