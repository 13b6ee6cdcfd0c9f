package analysis

import (
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// component is one thing activation patching patches: block layer's
// activation at head (-1: every head, or none) and position (-1: every
// one), whose metric goes to index at of the result.
type component struct{ layer, head, pos, at int }

// patchedComponents are the components of kind that PatchStream (a
// StreamKinds kind) or PatchHeads (a HeadKinds kind, byPosition or not)
// patches on sequences of t tokens of cfg's model, for the heads hs names
// (nil: every head), and the shape of the result; an error names a kind
// the model has not.
func patchedComponents(cfg model.Config, kind string, byPosition bool, hs ablation.Heads, t int) ([]component, []int, error) {
	if !slices.Contains(StreamKinds, kind) && !slices.Contains(HeadKinds, kind) {
		return nil, nil, errors.Errorf("activation patching: no kind %s; want one of %s (by layer and position) or %s (by head)", msg.Quote(kind), strings.Join(StreamKinds, ", "), strings.Join(HeadKinds, ", "))
	}
	if !slices.ContainsFunc(cfg.Activations(1, t), func(s model.ActivationSpec) bool { return s.TL == PatchName(kind, 0) }) {
		why := "an attention-only model has none"
		if kind == "resid_mid" && cfg.MLP {
			why = "a parallel residual has none"
		}
		return nil, nil, errors.Errorf("activation patching of %s: the model has no %s (%s)", kind, PatchName(kind, 0), why)
	}
	hs = hs.Of(cfg)
	var comps []component
	if slices.Contains(StreamKinds, kind) {
		var layers []int
		for _, lh := range hs {
			layers = append(layers, lh[0])
		}
		slices.Sort(layers)
		for _, l := range slices.Compact(layers) {
			for p := range t {
				comps = append(comps, component{l, -1, p, l*t + p})
			}
		}
		return comps, []int{cfg.Layers, t}, nil
	}
	heads := cfg.Heads
	if kind == "k" || kind == "v" {
		heads = cfg.KVHeadCount()
	}
	for _, lh := range hs {
		l, h := lh[0], lh[1]
		switch {
		case h >= heads:
		case !byPosition:
			comps = append(comps, component{l, h, -1, l*heads + h})
		default:
			for p := range t {
				comps = append(comps, component{l, h, p, (l*heads+h)*t + p})
			}
		}
	}
	if byPosition {
		return comps, []int{cfg.Layers, heads, t}, nil
	}
	return comps, []int{cfg.Layers, heads}, nil
}

// patcher runs the corrupted sequences with one layer's activation of a
// kind patched from the clean run: one graph, hooked at that activation
// in every layer, run again for each component.
type patcher struct {
	m       *model.Model
	g       *model.Graph
	vm      gorgonia.VM
	corrupt *data.Batch
	names   []string               // the hooked activation of each layer (lab names)
	specs   []model.ActivationSpec // their shapes and axes
	clean   []Tensor               // their values in the clean run
}

// newPatcher checks corrupt against the clean run (the same number of
// sequences, each of its length), reads kind's clean activations from
// it and builds the graph.
func newPatcher(clean *Cache, corrupt [][]int, kind string) (*patcher, error) {
	m, b := clean.Model, clean.Batch
	if clean.Logits.Len() == 0 {
		return nil, errors.New("activation patching: the clean run kept no logits to measure")
	}
	if err := checkSequences(m.Config, corrupt); err != nil {
		return nil, errors.Wrap(err, "the corrupted input")
	}
	if len(corrupt) != b.Size || len(corrupt[0]) != b.SeqLen {
		return nil, errors.Errorf("activation patching: %d corrupted sequences of %d tokens for %d clean ones of %d; give as many, of the same length", len(corrupt), len(corrupt[0]), b.Size, b.SeqLen)
	}
	p := &patcher{m: m, corrupt: tokenBatch(corrupt)}
	for l := range m.Config.Layers {
		spec, err := clean.Spec(PatchName(kind, l))
		if err != nil {
			return nil, errors.Wrapf(err, "activation patching of %s", kind)
		}
		v, err := clean.Get(spec.Name)
		if err != nil {
			return nil, errors.Wrapf(err, "activation patching of %s: keep PatchNames in the clean run", kind)
		}
		p.names, p.specs, p.clean = append(p.names, spec.Name), append(p.specs, spec), append(p.clean, v)
	}
	g, err := model.Build(m, model.BuildOptions{Batch: b.Size, SeqLen: b.SeqLen, Hooks: p.names})
	if err != nil {
		return nil, errors.Wrap(err, "building the patching graph")
	}
	p.g, p.vm = g, g.NewLeanMachine()
	return p, nil
}

func (p *patcher) close() { p.vm.Close() }

// run is metric on the corrupted run with elements at (flat, in the
// graph's layout) of layer's activation set to the clean run's; layer -1
// patches nothing.
func (p *patcher) run(metric Metric, layer int, at []int) (float64, error) {
	if layer >= 0 {
		if err := p.g.SetHook(p.names[layer], p.setter(layer, at)); err != nil {
			return 0, err
		}
	}
	logits, err := p.forward()
	if layer >= 0 {
		if err := p.g.SetHook(p.names[layer], nil); err != nil {
			return 0, err
		}
	}
	if err != nil {
		return 0, err
	}
	return metric(logits)
}

// forward runs the corrupted sequences with the hooks as they are set,
// and checks the logits.
func (p *patcher) forward() (Logits, error) {
	p.vm.Reset()
	b := p.corrupt
	if err := p.g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return Logits{}, err
	}
	if err := p.vm.RunAll(); err != nil {
		return Logits{}, errors.Wrap(err, "running the model")
	}
	v, err := p.g.LogitsValue()
	if err != nil {
		return Logits{}, err
	}
	logits, err := logitsOf(v)
	if err != nil {
		return Logits{}, err
	}
	return logits, logits.check(p.m, func(row int) int { return row % b.SeqLen })
}

// setter is the hook that copies elements at of the clean run's value of
// layer's activation into the corrupted run's.
func (p *patcher) setter(layer int, at []int) model.HookFunc {
	src := p.clean[layer]
	return func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		switch v := x.Data().(type) {
		case []float32:
			for _, i := range at {
				v[i] = src.f32[i]
			}
		case []float64:
			for _, i := range at {
				v[i] = src.f64[i]
			}
		default:
			return nil, errors.Errorf("values of type %T", v)
		}
		return x, nil
	}
}

// elements are the flat indices, in layer's activation's graph layout,
// of head (-1: every one) at position pos (the query's, for the pattern;
// -1: every one), in every sequence: read from the activation's axes, so
// that every layout (rows (B*T, D), (B, H, T, d), (G, B, T, d) with
// grouped queries) is the same code. Only the indices picked are visited.
func (p *patcher) elements(layer, head, pos int) []int {
	axes := p.specs[layer].Axes
	at := []int{0}
	stride := p.specs[layer].Shape.TotalSize()
	for _, a := range axes {
		stride /= a.Size
		only := -1
		switch a.Name {
		case "pos", "query_pos":
			only = pos
		case "head_index", "kv_head_index":
			only = head
		}
		var next []int
		for _, off := range at {
			if only >= 0 {
				next = append(next, off+only*stride)
				continue
			}
			for i := range a.Size {
				next = append(next, off+i*stride)
			}
		}
		at = next
	}
	return at
}
