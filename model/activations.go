package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/ops"
	"github.com/attnscope/attnscope/internal/raise"
	"github.com/attnscope/attnscope/layers"
)

// Activations are the named nodes of a graph (Graph.Activations), every
// one TransformerLens names (names.go has the table: Config.Activations).
// The first the lab named:
//
//	blocks.N.resid_pre       (B*T, D)       the residual stream into block N (N = 0: the embeddings)
//	blocks.N.attn.weights    (B, H, T, T)   block N's attention weights, rows = queries
//	blocks.N.attn.head_out   (B, H, T, d)   each head's output before the head merge
//	blocks.N.resid_post      (B*T, D)       the residual stream out of block N
//	logits                   (B*T, V)
//
// BuildOptions.Cache names those a run keeps readable (Graph.Activation);
// BuildOptions.Hooks those a caller's function may read and replace
// (Graph.SetHook, Graph.Hook). Layers report theirs through a layers.Tap;
// the model's own go through point.
func ResidPre(l int) string    { return fmt.Sprintf("blocks.%d.resid_pre", l) }
func ResidPost(l int) string   { return fmt.Sprintf("blocks.%d.resid_post", l) }
func AttnWeights(l int) string { return fmt.Sprintf("blocks.%d.attn.weights", l) }
func HeadOut(l int) string     { return fmt.Sprintf("blocks.%d.attn.head_out", l) }

// LogitsActivation names the logits among the activations.
const LogitsActivation = "logits"

// HookFunc is a caller's function at a hooked activation (BuildOptions.Hooks,
// Graph.SetHook), run on every run of the graph where the activation is
// computed. name is the activation's lab name; x its value this run, in the
// graph's layout (ActivationSpec.Shape) and the model's dtype, a copy the
// function may read and overwrite in place. It returns x (or nil) to go on
// with what x holds, or another tensor of x's shape and dtype to go on with
// that: either way the ops downstream read what it gave. Gradients pass
// through a hook unchanged, as through the identity.
type HookFunc func(name string, x *tensor.Dense) (*tensor.Dense, error)

// hook is what a graph holds at one hooked activation: the function the
// next runs call (nil: none) and the mask and fill of its Intervention once
// Graph.Hook made them.
type hook struct {
	name       string
	fn         HookFunc
	mask, fill *tensor.Dense
}

// run is the hook op's call: fn on y, and a replacement copied into y.
func (h *hook) run(y *tensor.Dense) error {
	if h.fn == nil {
		return nil
	}
	got, err := h.fn(h.name, y)
	if err != nil {
		return errors.Wrapf(err, "hook at %s", h.name)
	}
	if got == nil || got == y {
		return nil
	}
	if !got.Shape().Eq(y.Shape()) || got.Dtype() != y.Dtype() {
		return errors.Errorf("hook at %s: returned %v %v, want the activation's %v %v", h.name, got.Dtype(), got.Shape(), y.Dtype(), y.Shape())
	}
	return errors.Wrapf(tensor.Copy(y, got), "hook at %s", h.name)
}

// resolveNames turns the Cache and Hooks names (the lab's,
// TransformerLens's or globs) into lab names before anything is built.
func (gr *Graph) resolveNames() error {
	gr.specs = gr.Model.Config.Activations(gr.Opts.Batch, gr.Opts.SeqLen)
	cache, err := ResolveActivations(gr.specs, gr.Opts.Cache)
	if err != nil {
		return errors.Wrap(err, "build: BuildOptions.Cache")
	}
	hooked, err := ResolveActivations(gr.specs, gr.Opts.Hooks)
	if err != nil {
		return errors.Wrap(err, "build: BuildOptions.Hooks")
	}
	grads, err := ResolveActivations(gr.specs, gr.Opts.Grads)
	if err != nil {
		return errors.Wrap(err, "build: BuildOptions.Grads")
	}
	gr.Opts.Cache, gr.Opts.Hooks, gr.Opts.Grads = cache, hooked, grads
	gr.hooks = map[string]*hook{}
	for _, name := range hooked {
		gr.hooks[name] = &hook{name: name}
	}
	return nil
}

// keep registers x as the activation name.
func (gr *Graph) keep(name string, x *gorgonia.Node) {
	if _, dup := gr.Activations[name]; dup {
		raise.If(errors.Errorf("build: activation %s registered twice", name))
	}
	gr.Activations[name] = x
}

// point registers x as the activation name and returns what the ops
// downstream read: x, or when the graph hooks name the hook op's output.
// Graphs without activations (the decoder's) pass x on.
func (gr *Graph) point(name string, x *gorgonia.Node) *gorgonia.Node {
	if gr.Activations == nil {
		return x
	}
	gr.keep(name, x)
	h, ok := gr.hooks[name]
	if !ok {
		return x
	}
	return node(name + ".hook")(ops.Hook(x, name, h.run))
}

// tap is the graph as its layers' layers.Tap, or nil for a graph without
// activations (the decoder's).
func (gr *Graph) tap() layers.Tap {
	if gr.Activations == nil {
		return nil
	}
	return graphTap{gr}
}

type graphTap struct{ gr *Graph }

// Wants reports whether the graph caches, hooks or differentiates the
// activation.
func (t graphTap) Wants(name string) bool {
	_, hooked := t.gr.hooks[name]
	return hooked || slices.Contains(t.gr.Opts.Cache, name) || t.gr.wantsGrad(name)
}

func (t graphTap) At(name string, x *gorgonia.Node) *gorgonia.Node { return t.gr.point(name, x) }

// resultWeight is block l's W_out widened into the graph, for its heads'
// results when they are asked and the model keeps W_out in its file's
// dtype (layers.MultiHeadSelfAttention.ResultWeight), else nil.
func (gr *Graph) resultWeight(l int) *gorgonia.Node {
	name := fmt.Sprintf("blocks.%d.attn.out.weight", l)
	if gr.Model.Stored(name) == nil || !(graphTap{gr}).Wants(AttnResult(l)) {
		return nil
	}
	w := gr.Model.Param(name)
	if w == nil {
		raise.If(errors.Errorf("build: %s: its mapping faulted while widening it for %s", name, AttnResult(l)))
	}
	return layers.NewParam(gr.G, name+".widened", w) // (D, H*d) float32
}

// checkBuilt refuses a graph that lacks an activation its table lists
// and it was asked for: a builder that does not report it.
func (gr *Graph) checkBuilt() error {
	for _, name := range slices.Concat(gr.Opts.Cache, gr.Opts.Hooks, gr.Opts.Grads) {
		if _, ok := gr.Activations[name]; !ok {
			return errors.Errorf("build: activation %s was not built", name)
		}
	}
	return nil
}

// ActivationNames lists every activation of the graph, in build order.
func (gr *Graph) ActivationNames() []string {
	names := make([]string, len(gr.specs))
	for i, s := range gr.specs {
		names[i] = s.Name
	}
	return names
}

// cached are the nodes of Opts.Cache.
func (gr *Graph) cached() gorgonia.Nodes {
	var out gorgonia.Nodes
	for _, name := range gr.Opts.Cache {
		out = append(out, gr.Activations[name])
	}
	return out
}

// Activation is the value the last run left at the named activation (the
// lab's name or TransformerLens's), one of Opts.Cache, in the graph's
// layout (ActivationSpec.Shape; ActivationSpec.ToTL gives
// TransformerLens's) and the model's dtype. It belongs to the machine:
// read it before the next run.
func (gr *Graph) Activation(name string) (*tensor.Dense, error) {
	spec, err := gr.ActivationSpec(name)
	if err != nil {
		return nil, errors.Wrap(err, "activation")
	}
	if !slices.Contains(gr.Opts.Cache, spec.Name) {
		return nil, errors.Errorf("activation %s: the graph was built without it in BuildOptions.Cache", spec.Name)
	}
	return denseValue(gr.Activations[spec.Name], spec.Name)
}

// SetHook makes fn the function at the hooked activation name names (a
// lab or TransformerLens name, one of Opts.Hooks), or at every hooked
// activation a glob names (at least one), from the next run on; a nil fn
// leaves them as they are.
func (gr *Graph) SetHook(name string, fn HookFunc) error {
	names, err := ResolveActivations(gr.specs, []string{name})
	if err != nil {
		return errors.Wrap(err, "hook")
	}
	hooked := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return gr.hooks[n] == nil })
	if len(hooked) == 0 || len(hooked) < len(names) && !isGlob(name) {
		return errors.Errorf("hook %s: the graph was built without it in BuildOptions.Hooks", strings.Join(names, ", "))
	}
	for _, n := range hooked {
		gr.hooks[n].fn = fn
	}
	return nil
}

// Intervention is the mask and fill hook at one activation: element i
// (flat, row-major in the activation's shape) of the next runs is
// x_i*mask_i + fill_i, rounded after each operation as Gorgonia's
// HadamardProd and Add would.
type Intervention struct {
	Shape      tensor.Shape
	mask, fill *tensor.Dense
	set        func(i int, keep, add float64) // writes mask and fill at i
}

// Hook makes the named activation's function (one of Opts.Hooks) its mask
// and fill, and returns them: at rest (ones and zeros) the first time,
// else as they were left.
func (gr *Graph) Hook(name string) (Intervention, error) {
	spec, err := gr.ActivationSpec(name)
	if err != nil {
		return Intervention{}, errors.Wrap(err, "hook")
	}
	h, ok := gr.hooks[spec.Name]
	if !ok {
		return Intervention{}, errors.Errorf("hook %s: the graph was built without it in BuildOptions.Hooks", spec.Name)
	}
	if h.mask == nil {
		n := spec.Shape.TotalSize()
		h.mask, h.fill = newDense(gr.Model.Dtype, spec.Shape, ones(n)), newDense(gr.Model.Dtype, spec.Shape, make([]float64, n))
	}
	h.fn = maskFill(h.mask, h.fill)
	iv := Intervention{Shape: spec.Shape, mask: h.mask, fill: h.fill}
	switch mask := iv.mask.Data().(type) {
	case []float32:
		fill := iv.fill.Data().([]float32)
		iv.set = func(i int, keep, add float64) { mask[i], fill[i] = float32(keep), float32(add) }
	case []float64:
		fill := iv.fill.Data().([]float64)
		iv.set = func(i int, keep, add float64) { mask[i], fill[i] = keep, add }
	}
	return iv, nil
}

// maskFill is the hook function x*mask + fill, element by element, each
// product rounded to the dtype before the sum (no fused multiply-add).
func maskFill(mask, fill *tensor.Dense) HookFunc {
	return func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		switch v := x.Data().(type) {
		case []float32:
			m, f := mask.Float32s(), fill.Float32s()
			for i := range v {
				v[i] = float32(v[i]*m[i]) + f[i]
			}
		case []float64:
			m, f := mask.Float64s(), fill.Float64s()
			for i := range v {
				v[i] = float64(v[i]*m[i]) + f[i]
			}
		}
		return x, nil
	}
}

// Reset leaves the activation as it is.
func (iv Intervention) Reset() {
	setAll(iv.mask, 1)
	setAll(iv.fill, 0)
}

// Replace makes element i of the activation v.
func (iv Intervention) Replace(i int, v float64) { iv.set(i, 0, v) }

// ReplaceHead replaces head h's output in a hook on head outputs (HeadOut,
// (B, H, T, d)) at position pos, or at every position when pos is -1, in
// every row of the batch: element i becomes value(i).
func (iv Intervention) ReplaceHead(h, pos int, value func(i int) float64) {
	b, heads, t, d := iv.Shape[0], iv.Shape[1], iv.Shape[2], iv.Shape[3]
	for row := range b {
		for p := range t {
			if pos >= 0 && p != pos {
				continue
			}
			off := ((row*heads+h)*t + p) * d
			for i := off; i < off+d; i++ {
				iv.Replace(i, value(i))
			}
		}
	}
}

// ResetHooks leaves every hooked activation as it is: each Intervention at
// rest, every other function removed.
func (gr *Graph) ResetHooks() {
	for _, h := range gr.hooks {
		if h.mask == nil {
			h.fn = nil
			continue
		}
		setAll(h.mask, 1)
		setAll(h.fill, 0)
		h.fn = maskFill(h.mask, h.fill)
	}
}

func setAll(d *tensor.Dense, v float64) {
	switch data := d.Data().(type) {
	case []float32:
		for i := range data {
			data[i] = float32(v)
		}
	case []float64:
		for i := range data {
			data[i] = v
		}
	}
}
