package analysis

import (
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/model"
)

// PathPatch is path patching (Wang et al.'s, as TransformerLens's IOI
// work runs it) from the sender head (layer, head) to the inputs (any of
// "q", "k" and "v", such as "v" or "qk") of the receiver heads, all in
// later layers: the change of metric when the receivers' inputs are
// what they would be if the sender's z alone were the corrupted run's and
// reached them only through the residual stream. Three runs make it, on
// top of the clean and corrupted ones:
//
//  1. the clean sequences with the sender's z the corrupted run's and every
//     other head's z frozen to the clean run's (the MLPs recompute), keeping
//     the receivers' q, k or v;
//  2. the clean sequences with the receivers' inputs (each receiver head's
//     part of its layer's q, k or v, at every position) from run 1, every
//     other activation computed anew;
//
// and the figure is run 2's metric minus the clean run's. With grouped
// key-value heads a head's k and v are its group's, and only q is taken.
func PathPatch(m *model.Model, clean, corrupted [][]int, metric PatchMetric, sender [2]int, receivers ablation.Heads, inputs string) (float64, error) {
	if err := checkPath(m.Config, sender, receivers, inputs); err != nil {
		return 0, err
	}
	if err := sameShape(clean, corrupted); err != nil {
		return 0, err
	}
	if err := metric.check(m.Config, clean); err != nil {
		return 0, err
	}
	last := 0
	for _, r := range receivers {
		last = max(last, r[0])
	}
	var zs []string
	for l := sender[0]; l < last; l++ {
		zs = append(zs, model.HeadOut(l))
	}
	base, err := RunTokensWithCache(m, clean, zs...)
	if err != nil {
		return 0, errors.Wrap(err, "the clean run")
	}
	bad, err := RunTokensWithCache(m, corrupted, model.HeadOut(sender[0]))
	if err != nil {
		return 0, errors.Wrap(err, "the corrupted run")
	}
	received := receiverInputs(receivers, inputs)
	sent, err := RunTokensWithHooks(m, clean, freezeHooks(base, bad, zs, sender), received...)
	if err != nil {
		return 0, errors.Wrap(err, "the run from the sender")
	}
	hooks := make([]Hook, len(received))
	for i, name := range received {
		hooks[i] = Hook{Name: name, Fn: copyHeads(sent, name, receiversAt(receivers, name))}
	}
	patched, err := RunTokensWithHooks(m, clean, hooks)
	if err != nil {
		return 0, errors.Wrap(err, "the run of the patched receivers")
	}
	return metric.Of(patched) - metric.Of(base), nil
}

// checkPath refuses a path the model does not have: a head out of range,
// no receiver or one not after the sender, inputs other than q, k and v
// (each once), k or v with grouped key-value heads.
func checkPath(cfg model.Config, sender [2]int, receivers ablation.Heads, inputs string) error {
	inRange := func(what string, h [2]int) error {
		if h[0] < 0 || h[0] >= cfg.Layers || h[1] < 0 || h[1] >= cfg.Heads {
			return errors.Errorf("path patching: %s head (%d, %d) is not in the model's %d layers of %d heads", what, h[0], h[1], cfg.Layers, cfg.Heads)
		}
		return nil
	}
	if err := inRange("sender", sender); err != nil {
		return err
	}
	if len(receivers) == 0 {
		return errors.New("path patching: no receiver heads; give at least one in a layer after the sender's")
	}
	for _, r := range receivers {
		if err := inRange("receiver", r); err != nil {
			return err
		}
		if r[0] <= sender[0] {
			return errors.Errorf("path patching: receiver head (%d, %d) is not after the sender's layer %d; a head reads only earlier layers", r[0], r[1], sender[0])
		}
	}
	if inputs == "" || strings.Trim(inputs, "qkv") != "" {
		return errors.Errorf("path patching: inputs %q, want some of q, k and v (such as \"v\" or \"qk\")", inputs)
	}
	for _, c := range inputs {
		if strings.Count(inputs, string(c)) > 1 {
			return errors.Errorf("path patching: inputs %q name %c twice", inputs, c)
		}
	}
	if cfg.KVHeadCount() != cfg.Heads && strings.ContainsAny(inputs, "kv") {
		return errors.Errorf("path patching: inputs %q: with %d key-value heads for %d heads a head's k and v are its group's; patch q alone", inputs, cfg.KVHeadCount(), cfg.Heads)
	}
	return nil
}

// receiverInputs are the activations the receivers' inputs are part of:
// q, k or v of each receiver's layer.
func receiverInputs(receivers ablation.Heads, inputs string) []string {
	byInput := map[rune]func(int) string{'q': model.AttnQ, 'k': model.AttnK, 'v': model.AttnV}
	var names []string
	for _, c := range inputs {
		for _, r := range receivers {
			if name := byInput[c](r[0]); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return names
}

// receiversAt are the heads of the receivers in the layer of the named
// q, k or v ("blocks.2.attn.q").
func receiversAt(receivers ablation.Heads, name string) []int {
	var heads []int
	for _, r := range receivers {
		if name == model.AttnQ(r[0]) || name == model.AttnK(r[0]) || name == model.AttnV(r[0]) {
			heads = append(heads, r[1])
		}
	}
	return heads
}

// freezeHooks set every head's z in the layers zs to the clean run's,
// but the sender's, set to the corrupted run's.
func freezeHooks(clean, corrupted *Cache, zs []string, sender [2]int) []Hook {
	hooks := make([]Hook, len(zs))
	for i, name := range zs {
		hooks[i] = Hook{Name: name, Fn: func(_ string, z *tensor.Dense) (*tensor.Dense, error) {
			if err := copyAll(clean, name, z); err != nil {
				return nil, err
			}
			if name != model.HeadOut(sender[0]) {
				return z, nil
			}
			return z, copyHeadsOf(corrupted, name, z, []int{sender[1]})
		}}
	}
	return hooks
}

// copyHeads is a hook setting the heads' parts of the named activation
// (q, k or v) to run's.
func copyHeads(run *Cache, name string, heads []int) model.HookFunc {
	return func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		return x, copyHeadsOf(run, name, x, heads)
	}
}

// copyAll copies run's named activation into x, of its shape and dtype.
func copyAll(run *Cache, name string, x *tensor.Dense) error {
	from, err := run.Get(name)
	if err != nil {
		return err
	}
	into, err := tensorOf(x)
	if err != nil {
		return err
	}
	if into.Len() != from.Len() || into.Dtype() != from.Dtype() {
		return errors.Errorf("%s: %d values of %v to copy into %d of %v", name, from.Len(), from.Dtype(), into.Len(), into.Dtype())
	}
	into.copyIn(from)
	return nil
}

// copyHeadsOf copies the heads' entries of run's named activation into x,
// of its shape, whose head axis is head_index.
func copyHeadsOf(run *Cache, name string, x *tensor.Dense, heads []int) error {
	from, err := run.Get(name)
	if err != nil {
		return err
	}
	spec, err := run.Spec(name)
	if err != nil {
		return err
	}
	axis := slices.IndexFunc(spec.Axes, func(a model.Axis) bool { return a.Name == "head_index" })
	if axis < 0 {
		return errors.Errorf("%s has no head axis", spec.Name)
	}
	stride := 1
	for _, a := range spec.Axes[axis+1:] {
		stride *= a.Size
	}
	h := spec.Axes[axis].Size
	for i := range from.Len() {
		if slices.Contains(heads, i/stride%h) {
			setEntry(x, i, from.At(i))
		}
	}
	return nil
}

// setEntry sets x's flat entry i to v, in x's dtype.
func setEntry(x *tensor.Dense, i int, v float64) {
	switch d := x.Data().(type) {
	case []float32:
		d[i] = float32(v)
	case []float64:
		d[i] = v
	}
}
