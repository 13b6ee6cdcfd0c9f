package hf

import (
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// unscaledRope is the rope_type of plain rotary positions: angle
// t · rope_theta^(−2i/d) at position t. The others the model builds are
// its rope scalings, model.RopeScalings (as modeling_rope_utils'
// _compute_linear_scaling_rope_parameters and _compute_llama3_parameters
// compute them), each a rope_type of the same name; the other kinds
// (dynamic, yarn, longrope) are refused by name.
const unscaledRope = "default"

var builtRopes = append([]string{unscaledRope}, model.RopeScalings...)

// rotary is one set of rotary parameters: the base, and the scaling of the
// inverse frequencies with its keys (model.Config's rope keys).
type rotary struct {
	theta    float64
	scaling  string // "" unscaled, or one of model.RopeScalings
	factor   float64
	lowFreq  float64 // llama3's low_freq_factor
	highFreq float64 // llama3's high_freq_factor
	original int     // llama3's original_max_position_embeddings
	// thetaKey is the key theta was read from, for a message; "" is
	// rope_theta.
	thetaKey string
}

// apply makes r the rotary positions of every layer of cfg (of the global
// layers when cfg.LocalRopeBase is set).
func (r rotary) apply(cfg *model.Config) {
	cfg.RopeBase, cfg.RopeScaling, cfg.RopeFactor = r.theta, r.scaling, r.factor
	cfg.RopeLowFreqFactor, cfg.RopeHighFreqFactor, cfg.RopeOriginalContext = r.lowFreq, r.highFreq, r.original
}

// readRope is the rotary parameters a config.json gives every layer, in
// either of the forms transformers writes: rope_theta (defTheta when
// absent) beside rope_scaling (null, or a dict naming its rope_type,
// "type" in older files), or since transformers 5 one rope_parameters
// dict holding rope_type and rope_theta. A partial rotary factor is
// refused by name.
func readRope(keys configKeys, defTheta float64) (rotary, error) {
	if err := checkFullRotary("", keys); err != nil {
		return rotary{}, err
	}
	theta, err := keys.number("rope_theta", defTheta)
	if err != nil {
		return rotary{}, err
	}
	r := rotary{theta: theta}
	for _, key := range []string{"rope_scaling", "rope_parameters"} {
		dict, err := keys.dict(key)
		if err != nil {
			return rotary{}, err
		}
		if err := notPerLayerType(key, dict); err != nil {
			return rotary{}, err
		}
		if r, err = r.read(key, dict); err != nil {
			return rotary{}, err
		}
	}
	return r, r.checkTheta()
}

// notPerLayerType refuses a dict of rotary parameters per layer type, in a
// config whose layers all share them.
func notPerLayerType(key string, dict configKeys) error {
	for name, raw := range dict {
		if isObject(raw) {
			return errors.Errorf("%s.%s: rotary parameters per layer type are not built", key, msg.Clean(name))
		}
	}
	return nil
}

// perLayerType reports whether a rope_parameters dict holds a dict per
// layer type (Gemma 3's in transformers 5).
func perLayerType(dict configKeys) bool {
	for _, raw := range dict {
		if isObject(raw) {
			return true
		}
	}
	return false
}

func isObject(raw []byte) bool { return len(raw) > 0 && raw[0] == '{' }

// read is r with what the rope_scaling or rope_parameters dict key gives
// over it: its rope_theta, and its scaling (when both dicts scale, the
// same way).
func (r rotary) read(key string, dict configKeys) (rotary, error) {
	if err := checkFullRotary(key+".", dict); err != nil {
		return rotary{}, err
	}
	if dict.present("rope_theta") {
		theta, err := dict.number("rope_theta", 0)
		if err != nil {
			return rotary{}, errors.Wrap(err, key)
		}
		r.theta, r.thetaKey = theta, key+".rope_theta"
	}
	field, kind, err := ropeType(key, dict)
	if err != nil || kind == unscaledRope {
		return r, err
	}
	if r.scaling == "" {
		return r.scaled(key, kind, dict)
	}
	again, err := r.scaled(key, kind, dict)
	if err == nil && again != r {
		err = errors.Errorf("%s.%s = %s: scales the rotary positions otherwise than rope_scaling does", key, field, msg.Quote(kind))
	}
	return again, err
}

// ropeType is the rope_type a dict names ("type" in older files, which
// transformers reads over rope_type), and the field naming it.
func ropeType(key string, dict configKeys) (field, kind string, err error) {
	field, kind = "rope_type", unscaledRope
	for _, f := range []string{"rope_type", "type"} {
		if !dict.present(f) {
			continue
		}
		if kind, err = dict.str(f, unscaledRope); err != nil {
			return "", "", errors.Wrap(err, key)
		}
		field = f
	}
	for _, built := range builtRopes {
		if kind == built {
			return field, kind, nil
		}
	}
	return "", "", errors.Errorf("%s.%s = %s: not built; built: %s", key, field, msg.Quote(kind), strings.Join(builtRopes, ", "))
}

// scaled is r scaled as kind (model.RopeScalings) with the keys of dict
// key, each of which the kind needs.
func (r rotary) scaled(key, kind string, dict configKeys) (rotary, error) {
	r.scaling = kind
	var err error
	if r.factor, err = scaleKey(dict, kind, "factor"); err != nil || kind == model.RopeScalingLinear {
		return r, errors.Wrap(err, key)
	}
	if r.lowFreq, err = scaleKey(dict, kind, "low_freq_factor"); err != nil {
		return rotary{}, errors.Wrap(err, key)
	}
	if r.highFreq, err = scaleKey(dict, kind, "high_freq_factor"); err != nil {
		return rotary{}, errors.Wrap(err, key)
	}
	if !(r.highFreq > r.lowFreq) {
		return rotary{}, errors.Errorf("%s: high_freq_factor = %v: want more than low_freq_factor = %v", key, r.highFreq, r.lowFreq)
	}
	if _, err = scaleKey(dict, kind, "original_max_position_embeddings"); err != nil {
		return rotary{}, errors.Wrap(err, key)
	}
	r.original, err = dict.size("original_max_position_embeddings", 0)
	return r, errors.Wrap(err, key)
}

// scaleKey is the number > 0 that name gives in the dict of a rope_type
// kind, which needs it.
func scaleKey(dict configKeys, kind, name string) (float64, error) {
	if !dict.present(name) {
		return 0, errors.Errorf("rope_type %s needs %s", msg.Quote(kind), name)
	}
	v, err := dict.number(name, 0)
	if err == nil && !(v > 0) {
		err = dict.wrongValue(name, "a number > 0")
	}
	return v, err
}

// checkTheta refuses a rotary base of 1 or less.
func (r rotary) checkTheta() error {
	if !(r.theta > 1) {
		key := r.thetaKey
		if key == "" {
			key = "rope_theta"
		}
		return errors.Errorf("%s = %v: want a number > 1", key, r.theta)
	}
	return nil
}

// checkFullRotary refuses a partial_rotary_factor other than 1: rotary
// positions on only some of a head's channels are not read for these
// architectures. prefix names the dict keys is ("rope_parameters."), ""
// for config.json's top level.
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
