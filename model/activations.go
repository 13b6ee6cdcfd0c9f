package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/raise"
	"github.com/attnscope/attnscope/layers"
)

// Activations are the named nodes every graph registers (Graph.Activations),
// named as TransformerLens names its hooks, with the checkpoint's prefixes:
//
//	blocks.N.resid_pre       (B*T, D)       the residual stream into block N (N = 0: the embeddings)
//	blocks.N.attn.weights    (B, H, T, T)   block N's attention weights, rows = queries
//	blocks.N.attn.head_out   (B, H, T, d)   each head's output before the head merge
//	blocks.N.resid_post      (B*T, D)       the residual stream out of block N
//	logits                   (B*T, V)
//
// BuildOptions.Cache names those a run keeps readable (Graph.Activation);
// BuildOptions.Hooks those it intervenes on (Graph.Hook). Adding an
// activation is one call to keep (or point, to allow a hook) where the
// graph is built.
func ResidPre(l int) string    { return fmt.Sprintf("blocks.%d.resid_pre", l) }
func ResidPost(l int) string   { return fmt.Sprintf("blocks.%d.resid_post", l) }
func AttnWeights(l int) string { return fmt.Sprintf("blocks.%d.attn.weights", l) }
func HeadOut(l int) string     { return fmt.Sprintf("blocks.%d.attn.head_out", l) }

// LogitsActivation names the logits among the activations.
const LogitsActivation = "logits"

// keep registers x as the activation name.
func (gr *Graph) keep(name string, x *gorgonia.Node) {
	if _, dup := gr.Activations[name]; dup {
		raise.If(errors.Errorf("build: activation %s registered twice", name))
	}
	gr.Activations[name] = x
}

// point registers x as the activation name and returns it through the hook
// at name when the graph has one: one call for an activation that may be
// read or intervened on.
func (gr *Graph) point(name string, x *gorgonia.Node) *gorgonia.Node {
	gr.keep(name, x)
	if h := gr.hookAt(name, x.Shape()); h != nil {
		return raise.Must(h.Apply(name+".hooked", x))
	}
	return x
}

// hookAt makes the hook's mask and fill inputs, of shape, when Opts.Hooks
// names name, and returns nil otherwise.
func (gr *Graph) hookAt(name string, shape tensor.Shape) *layers.Hook {
	if !slices.Contains(gr.Opts.Hooks, name) {
		return nil
	}
	n := shape.TotalSize()
	h := &layers.Hook{
		Mask: layers.NewParam(gr.G, name+".hook_mask", newDense(gr.Model.Dtype, shape, ones(n))),
		Fill: layers.NewParam(gr.G, name+".hook_fill", newDense(gr.Model.Dtype, shape, make([]float64, n))),
	}
	gr.hooks[name] = h
	return h
}

// checkNames refuses a Cache or Hooks name the graph does not have, naming
// the ones it has.
func (gr *Graph) checkNames() error {
	for _, name := range gr.Opts.Cache {
		if _, ok := gr.Activations[name]; !ok {
			return errors.Errorf("build: no activation %q to cache (the graph has %s)", name, strings.Join(gr.ActivationNames(), ", "))
		}
	}
	for _, name := range gr.Opts.Hooks {
		if _, ok := gr.hooks[name]; !ok {
			return errors.Errorf("build: no activation %q to hook (hooks go on resid_pre, resid_post and attn.head_out)", name)
		}
	}
	return nil
}

// ActivationNames lists the graph's activations in build order.
func (gr *Graph) ActivationNames() []string {
	names := []string{}
	for l := range gr.Model.Config.Layers {
		names = append(names, ResidPre(l), AttnWeights(l), HeadOut(l), ResidPost(l))
	}
	return append(names, LogitsActivation)
}

// cached are the nodes of Opts.Cache.
func (gr *Graph) cached() gorgonia.Nodes {
	var out gorgonia.Nodes
	for _, name := range gr.Opts.Cache {
		out = append(out, gr.Activations[name])
	}
	return out
}

// Activation is the value the last run left at the named activation, one
// of Opts.Cache, in the model's dtype. It belongs to the machine: read it
// before the next run.
func (gr *Graph) Activation(name string) (*tensor.Dense, error) {
	if !slices.Contains(gr.Opts.Cache, name) {
		return nil, errors.Errorf("activation %s: the graph was built without it in BuildOptions.Cache", name)
	}
	return denseValue(gr.Activations[name], name)
}

// Intervention is the hook at one activation: element i (flat, row-major in
// the activation's shape) of the next runs is x_i*mask_i + fill_i.
type Intervention struct {
	Shape      tensor.Shape
	mask, fill *tensor.Dense
	set        func(i int, keep, add float64) // writes mask and fill at i
}

// Hook is the intervention at the named activation, one of Opts.Hooks.
func (gr *Graph) Hook(name string) (Intervention, error) {
	h, ok := gr.hooks[name]
	if !ok {
		return Intervention{}, errors.Errorf("hook %s: the graph was built without it in BuildOptions.Hooks", name)
	}
	iv := Intervention{Shape: h.Mask.Shape(), mask: h.Mask.Value().(*tensor.Dense), fill: h.Fill.Value().(*tensor.Dense)}
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

// ResetHooks leaves every hooked activation as it is.
func (gr *Graph) ResetHooks() {
	for _, h := range gr.hooks {
		setAll(h.Mask.Value().(*tensor.Dense), 1)
		setAll(h.Fill.Value().(*tensor.Dense), 0)
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
