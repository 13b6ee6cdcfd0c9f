package hf

import (
	"encoding/json"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// ropeDicts are the dicts a config.json may give rotary parameters in.
var ropeDicts = []string{"rope_scaling", "rope_parameters"}

// partialRope sets cfg's rotary positions from a config whose class turns
// only a fraction of each head's channels: GPT-NeoX's rotary_pct, the Phi
// family's partial_rotary_factor (fractionKey, def when absent), as
// model.Config.RotaryDimsKey (0 for the whole head). As the classes'
// convert_rope_params_to_dict do, a partial_rotary_factor in
// rope_parameters (transformers 5) wins over the top-level key, and
// baseKey ("rotary_emb_base" for GPT-NeoX) stands for rope_theta; the rest
// is read as a Llama's (setRope). cfg's head width must be set.
func partialRope(keys configKeys, fractionKey string, def float64, baseKey string, cfg *model.Config) error {
	key, fraction, err := rotaryFraction(keys, fractionKey, def)
	if err != nil {
		return err
	}
	if !(fraction > 0 && fraction <= 1) {
		return errors.Errorf("%s = %v: want a fraction in (0, 1]", key, fraction)
	}
	// transformers truncates: int(head_dim * fraction).
	headDim := cfg.DHead()
	dims := int(float64(headDim) * fraction)
	if dims == 0 || dims%2 != 0 {
		return errors.Errorf("%s = %v turns int(%d × %v) = %d channels of each head; rotary positions turn an even number > 0 of them",
			key, fraction, headDim, fraction, dims)
	}
	rest, err := withoutFraction(keys, fractionKey, baseKey)
	if err != nil {
		return err
	}
	if dims == headDim {
		dims = 0
	}
	cfg.RotaryDimsKey = dims
	return setRope(rest, cfg)
}

// setRope sets cfg's rotary positions from a Llama-family config.json's
// keys (readRope): the base, and its linear or llama3 scaling.
func setRope(keys configKeys, cfg *model.Config) error {
	r, err := readRope(keys, model.DefaultRopeBase)
	if err != nil {
		return err
	}
	r.apply(cfg)
	return nil
}

// rotaryFraction is the fraction of each head's channels that turn, and
// the key it was read from.
func rotaryFraction(keys configKeys, fractionKey string, def float64) (string, float64, error) {
	for _, name := range ropeDicts {
		dict, err := keys.dict(name)
		if err != nil {
			return "", 0, err
		}
		if dict.present("partial_rotary_factor") {
			key := name + ".partial_rotary_factor"
			f, err := dict.number("partial_rotary_factor", 0)
			if err != nil {
				return "", 0, errors.Wrap(err, name)
			}
			return key, f, nil
		}
	}
	f, err := keys.number(fractionKey, def)
	return fractionKey, f, err
}

// withoutFraction is keys without the fraction (the top-level key and the
// dicts' partial_rotary_factor), with baseKey's value as rope_theta when
// the file gives it: what ropeBase reads.
func withoutFraction(keys configKeys, fractionKey, baseKey string) (configKeys, error) {
	out := make(configKeys, len(keys))
	for k, v := range keys {
		out[k] = v
	}
	delete(out, fractionKey)
	delete(out, "partial_rotary_factor")
	if baseKey != "" && keys.present(baseKey) {
		if _, err := keys.number(baseKey, 0); err != nil {
			return nil, err
		}
		out["rope_theta"] = keys[baseKey]
	}
	for _, name := range ropeDicts {
		dict, err := keys.dict(name)
		if err != nil || !dict.present("partial_rotary_factor") {
			continue
		}
		delete(dict, "partial_rotary_factor")
		raw, err := json.Marshal(map[string]json.RawMessage(dict))
		if err != nil {
			return nil, errors.Wrap(err, name)
		}
		out[name] = raw
	}
	return out, nil
}
