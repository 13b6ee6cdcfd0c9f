package hf

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// unscaledRope is the rope_type of plain rotary positions, the only kind
// the model builds: angle t · rope_theta^(−2i/d) at position t. Every
// other kind (linear, dynamic, yarn, longrope, llama3) rescales the
// frequencies or the positions.
const unscaledRope = "default"

// ropeBase is the rotary base a Llama-family config.json gives, in either
// of the forms transformers writes: rope_theta beside rope_scaling (null,
// or a dict naming its rope_type, "type" in older files), or since
// transformers 5 one rope_parameters dict holding rope_type and
// rope_theta. Scaled rotary positions and a partial rotary factor are
// refused by name.
func ropeBase(keys configKeys) (float64, error) {
	params := configKeys{}
	for _, key := range []string{"rope_scaling", "rope_parameters"} {
		dict, err := keys.dict(key)
		if err != nil {
			return 0, err
		}
		if err := checkRopeDict(key, dict); err != nil {
			return 0, err
		}
		if key == "rope_parameters" {
			params = dict
		}
	}
	if err := checkFullRotary("", keys); err != nil {
		return 0, err
	}
	theta, err := keys.number("rope_theta", model.DefaultRopeBase)
	if err != nil {
		return 0, err
	}
	key := "rope_theta"
	if params.present("rope_theta") {
		key = "rope_parameters.rope_theta"
		if theta, err = params.number("rope_theta", 0); err != nil {
			return 0, errors.Wrap(err, "rope_parameters")
		}
	}
	if !(theta > 1) {
		return 0, errors.Errorf("%s = %v: want a number > 1", key, theta)
	}
	return theta, nil
}

// checkRopeDict refuses a rope_scaling or rope_parameters dict that asks
// for rotary positions other than the unscaled ones.
func checkRopeDict(key string, dict configKeys) error {
	for name, raw := range dict {
		if len(raw) > 0 && raw[0] == '{' {
			return errors.Errorf("%s.%s: rotary parameters per layer type are not built", key, msg.Clean(name))
		}
	}
	for _, field := range []string{"rope_type", "type"} {
		kind, err := dict.str(field, unscaledRope)
		if err != nil {
			return errors.Wrap(err, key)
		}
		if kind != unscaledRope {
			return errors.Errorf("%s.%s = %s: not built; only unscaled rotary positions are (%s null, or rope_type %s)",
				key, field, msg.Quote(kind), key, msg.Quote(unscaledRope))
		}
	}
	return checkFullRotary(key+".", dict)
}

// checkFullRotary refuses a partial_rotary_factor other than 1: rotary
// positions on only some of a head's channels are not built. prefix names
// the dict keys is ("rope_parameters."), "" for config.json's top level.
func checkFullRotary(prefix string, keys configKeys) error {
	factor, err := keys.number("partial_rotary_factor", 1)
	if err != nil {
		return errors.Errorf("%s%v", prefix, err)
	}
	if factor != 1 {
		return errors.Errorf("%spartial_rotary_factor = %v: not built; rotary positions turn all of a head's channels (1)", prefix, factor)
	}
	return nil
}

// dict is key's value parsed as a JSON object, empty when absent or null.
func (c configKeys) dict(key string) (configKeys, error) {
	if !c.present(key) {
		return configKeys{}, nil
	}
	dict, err := parseConfig(c[key])
	if err != nil {
		return nil, c.wrongValue(key, "null or an object")
	}
	return dict, nil
}
