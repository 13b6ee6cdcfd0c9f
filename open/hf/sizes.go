package hf

import (
	"github.com/attnscope/attnscope/model"
)

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
