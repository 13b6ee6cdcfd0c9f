package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// Cache is one forward pass of a batch and the activations it kept, by
// name (model.ResidPre and kin), as TransformerLens's run_with_cache: every
// analysis that only reads a run takes a Cache instead of running the model
// again.
type Cache struct {
	Model  *model.Model
	Batch  *data.Batch
	Logits Logits // (B*T, V)
	// Graph is the summary of the graph that ran (model.Graph.Summary),
	// for a view that describes it: no other graph is built to say so.
	Graph model.Summary
	acts  map[string]Tensor // by the lab's name
	grads map[string]Tensor // d metric / d activation, by the lab's name (RunTokensWithGrads)
	specs []model.ActivationSpec
	// weights holds every layer's attention weights one layer after the
	// other, (L, B, H, T, T), when the run kept them all: each layer's
	// Tensor is a view of it, and so is a one-example run's Pass, which
	// then copies nothing (38 MB at GPT-2 small's size over 256 tokens).
	weights Tensor
}

// RunWithCache runs m once on b and keeps the named activations (plus the
// logits): each name the lab's (model.ResidPre), TransformerLens's
// ("blocks.0.hook_resid_pre") or a glob of either ("blocks.*.attn.weights"),
// resolved before anything is built (model.ResolveActivations); a name
// the graph does not have is refused, listing those it has. A NaN or
// infinity in the attention weights or the logits is an error naming where
// (model.NonFinite).
func RunWithCache(m *model.Model, b *data.Batch, names ...string) (*Cache, error) {
	return run(m, b, true, names, nil)
}

// Hook is a caller's function at an activation for RunWithHooks: Fn runs
// at every activation Name names (a name or glob, the lab's or
// TransformerLens's), reading it and optionally replacing it for the ops
// downstream (model.HookFunc).
type Hook struct {
	Name string
	Fn   model.HookFunc
}

// RunWithHooks is RunWithCache with hooks' functions run at their
// activations, TransformerLens's run_with_hooks: the logits and the named
// activations kept are those of the hooked run.
func RunWithHooks(m *model.Model, b *data.Batch, hooks []Hook, names ...string) (*Cache, error) {
	return run(m, b, true, names, nil, hooks...)
}

// runMaps is RunWithCache keeping every layer's attention weights and no
// logits, for an analysis that reads only the maps: the logits of a long
// batch are the largest activation by far (50257 a position for GPT-2).
func runMaps(m *model.Model, b *data.Batch) (*Cache, error) {
	return run(m, b, false, Weights(m), nil)
}

// run is RunWithHooks, with the logits kept or not, and with the
// gradients of grads' metric at every activation kept when grads is not nil.
func run(m *model.Model, b *data.Batch, keepLogits bool, asked []string, grads *metricGrads, hooks ...Hook) (*Cache, error) {
	specs := m.Config.Activations(b.Size, b.SeqLen)
	names, err := model.ResolveActivations(specs, asked)
	if err != nil {
		return nil, err
	}
	hooked := make([]string, len(hooks))
	for i, h := range hooks {
		hooked[i] = h.Name
	}
	opts := model.BuildOptions{Batch: b.Size, SeqLen: b.SeqLen, Cache: names, Hooks: hooked}
	if grads != nil {
		opts.Grads, opts.MetricWeights = names, grads.weights != nil
	}
	g, err := model.Build(m, opts)
	if err != nil {
		return nil, errors.Wrap(err, "building the inference graph")
	}
	if opts.MetricWeights {
		if err := g.SetMetricWeights(grads.weights); err != nil {
			return nil, err
		}
	}
	for _, h := range hooks {
		if err := g.SetHook(h.Name, h.Fn); err != nil {
			return nil, err
		}
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return nil, err
	}
	// The one-shot machine binds the kept nodes to its values, where a
	// TapeMachine copied every one (at GPT-2 small's size over 256 tokens,
	// 87 MB a run), and lets go of every other value once the run has read
	// it (about 500 MB more at that size if kept to the end).
	vm := g.NewOneShotMachine()
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		return nil, errors.Wrap(err, "running the model")
	}
	c := &Cache{Model: m, Batch: b, acts: map[string]Tensor{}, specs: specs}
	if grads != nil {
		if c.grads, err = gradsOf(g, names); err != nil {
			return nil, err
		}
	}
	if c.Graph, err = g.Summary(); err != nil {
		return nil, err
	}
	if keepLogits {
		v, err := g.LogitsValue()
		if err != nil {
			return nil, err
		}
		if c.Logits, err = logitsOf(v); err != nil {
			return nil, err
		}
	}
	into := c.weightsInto(names)
	for _, name := range names {
		v, err := g.Activation(name)
		if err != nil {
			return nil, err
		}
		if c.acts[name], err = kept(v, into(name)); err != nil {
			return nil, errors.Wrap(err, name)
		}
	}
	if err := c.checkFinite(keepLogits); err != nil {
		return nil, err
	}
	return c, nil
}

// kept is an activation's value v as the cache keeps it: copied into
// into, its place in Cache.weights, when it has one, else v itself, in the
// model's dtype (no copy: the graph never runs again). The logits kept by
// name are the same memory as Cache.Logits.
func kept(v *tensor.Dense, into Tensor) (Tensor, error) {
	if into.Len() == 0 {
		return tensorOf(v)
	}
	return into, into.copyFrom(v)
}

// weightsInto allocates c.weights, in the model's dtype, when names hold
// every layer's attention weights, and returns where an activation is
// kept: its layer's part of c.weights for a layer's weights, else the
// empty Tensor (its own memory).
func (c *Cache) weightsInto(names []string) func(name string) Tensor {
	cfg, b := c.Model.Config, c.Batch
	layer := map[string]int{}
	for l := range cfg.Layers {
		if !slices.Contains(names, model.AttnWeights(l)) {
			return func(string) Tensor { return Tensor{} }
		}
		layer[model.AttnWeights(l)] = l
	}
	c.weights = zeroTensor(c.Model.Dtype, []int{cfg.Layers, b.Size, cfg.Heads, b.SeqLen, b.SeqLen})
	return func(name string) Tensor {
		if l, ok := layer[name]; ok {
			return c.weights.sub(l)
		}
		return Tensor{}
	}
}

// Get is the named activation, which the run must have kept: name is the
// lab's or TransformerLens's, or a glob naming one activation. It is in
// the graph's layout (model.ActivationSpec.Shape: a row of the stream is
// (B*T, D)); TL gives TransformerLens's.
func (c *Cache) Get(name string) (Tensor, error) {
	if t, ok := c.acts[name]; ok {
		return t, nil
	}
	spec, err := c.Spec(name)
	if err != nil {
		return Tensor{}, err
	}
	t, ok := c.acts[spec.Name]
	if !ok {
		return Tensor{}, errors.Errorf("the run kept no activation %s (RunWithCache keeps the activations it is given)", spec.Name)
	}
	return t, nil
}

// TL is the named activation (as Get takes it) in TransformerLens's
// layout, batch first (model.ActivationSpec.TLShape: a row of the stream
// is (B, T, D), the heads' outputs (B, T, H, d)): a copy, in the model's
// dtype.
func (c *Cache) TL(name string) (Tensor, error) {
	t, err := c.Get(name)
	if err != nil {
		return Tensor{}, err
	}
	spec, err := c.Spec(name)
	if err != nil {
		return Tensor{}, err
	}
	v, err := spec.ToTL(t.dense())
	if err != nil {
		return Tensor{}, err
	}
	return tensorOf(v)
}

// Spec describes the activation name names (the lab's or
// TransformerLens's name, or a glob naming one activation) in the graph
// that ran, whether the run kept it or not.
func (c *Cache) Spec(name string) (model.ActivationSpec, error) {
	names, err := model.ResolveActivations(c.specs, []string{name})
	if err != nil {
		return model.ActivationSpec{}, err
	}
	if len(names) != 1 {
		return model.ActivationSpec{}, errors.Errorf("activation %s names %d activations (%s), want one", msg.Quote(name), len(names), strings.Join(names, ", "))
	}
	return c.specs[slices.IndexFunc(c.specs, func(s model.ActivationSpec) bool { return s.Name == names[0] })], nil
}

// checkFinite refuses a run with a NaN or infinite attention weight (in a
// kept map) or logit, naming the first layer and head (then position) where
// one appears: every view of such a run would be blank or meaningless.
func (c *Cache) checkFinite(logits bool) error {
	for l := range c.Model.Config.Layers {
		att, ok := c.acts[model.AttnWeights(l)]
		if !ok {
			continue
		}
		b, h, t := att.Shape[0], att.Shape[1], att.Shape[2]
		if i := att.firstNonFinite(); i >= 0 {
			return model.NonFinite(c.Model, fmt.Sprintf("layer %d head %d: attention weight (query %d, key %d) of example %d is %v",
				l, i/(t*t)%h, i/t%t, i%t, i/(h*t*t)%b, att.At(i)))
		}
	}
	if !logits {
		return nil
	}
	return c.Logits.check(c.Model, func(row int) int { return row % c.Batch.SeqLen })
}

// Weights are the names of every layer's attention weights, for
// RunWithCache.
func Weights(m *model.Model) []string {
	var names []string
	for l := range m.Config.Layers {
		names = append(names, model.AttnWeights(l))
	}
	return names
}

// Circuit are the names the circuit analyses read: every layer's attention
// weights and head outputs, the residual stream into and out of each
// block and, with full blocks, each MLP's output.
func Circuit(m *model.Model) []string {
	names := Weights(m)
	for l := range m.Config.Layers {
		names = append(names, model.HeadOut(l), model.ResidPre(l), model.ResidPost(l))
		if m.Config.MLP {
			names = append(names, model.MLPOut(l))
		}
	}
	return names
}

// InspectStreams is the high range of the second PCG words an inspection
// draws from ("insp" in the high bytes). Training numbers its batches'
// streams by step (data.StepRNG), which never gets this large, and keeps
// evaluation (data.EvalStream) and dropout in ranges of their own, so
// inspect never shows or scores a batch training drew.
const InspectStreams uint64 = 0x696e_7370_0000_0000

// ShownStream is the stream of the one sequence inspect shows, and
// SamplesStream that of the examples Examples draws and of Measure's
// sequences: apart, so changing the number of examples never changes the
// sequence shown.
const (
	ShownStream   = InspectStreams | 1
	SamplesStream = InspectStreams | 2
)

// ProbeStream is the stream training's circuits probe draws its examples
// and prefix-matching sequences from. It is training step 2's (the probe
// predates InspectStreams); moving it rewrites every run's circuits.jsonl,
// so it waits for the committed runs to be retrained.
const ProbeStream uint64 = 2

// Examples draws n examples of task from seed (SamplesStream): the batch
// every analysis of one inspection shares.
func Examples(task data.Task, n int, seed uint64) (*data.Batch, error) {
	return Draw(task, n, seed, SamplesStream)
}

// Draw draws n examples of task from the PCG of seed and stream.
func Draw(task data.Task, n int, seed, stream uint64) (*data.Batch, error) {
	b := data.NewBatch(n, task.SeqLen())
	if err := data.Fill(task, b, rand.New(rand.NewPCG(seed, stream))); err != nil {
		return nil, err
	}
	return b, nil
}
