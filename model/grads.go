package model

import (
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/raise"
	"github.com/attnscope/attnscope/layers"
)

// MetricWeightsName names the (B*T, V) input of a graph built with
// BuildOptions.MetricWeights.
const MetricWeightsName = "metric_weights"

// checkGrads refuses BuildOptions.Grads the graph cannot build: with
// Train (whose gradients Grad builds from the same nodes), a block's norm
// scale with the parallel residual (one node for both norms), or over
// weights kept in their file's dtype (their ops have no backward).
func checkGrads(m *Model, opts BuildOptions) error {
	if len(opts.Grads) == 0 {
		if opts.MetricWeights {
			return errors.New("build: BuildOptions.MetricWeights without Grads: the metric is built only to differentiate it")
		}
		return nil
	}
	if opts.Train {
		return errors.New("build: BuildOptions.Grads with Train: a graph builds the gradients of its parameters or of activations, not both")
	}
	if m.Config.ParallelResidual {
		names, err := ResolveActivations(m.Config.Activations(opts.Batch, opts.SeqLen), opts.Grads)
		if err != nil {
			return errors.Wrap(err, "build: BuildOptions.Grads")
		}
		for _, name := range names {
			if strings.HasSuffix(name, ".scale") && strings.HasPrefix(name, "blocks.") {
				return errors.Errorf("build: BuildOptions.Grads: %s: with the parallel residual both norms of a block read one stream, and the graph computes their scale once, so its gradient would be both of theirs", name)
			}
		}
	}
	for _, p := range m.Params {
		if p.Stored != nil {
			return errors.Errorf("build: BuildOptions.Grads: tensor %q is kept in its file's %s; gradients need float32 weights (widen the model first, Model.WidenStored)", p.Name, p.Stored.DType)
		}
	}
	return nil
}

// activationGradients adds d metric / d activation for each of Opts.Grads,
// the metric being Loss, or Σ Logits ⊙ MetricWeights with
// Opts.MetricWeights, and keeps only what the outputs and these gradients
// need (as gradients does, for the same reason).
func (gr *Graph) activationGradients() {
	metric := gr.Loss
	if gr.Opts.MetricWeights {
		n, v := gr.Opts.Batch*gr.Opts.SeqLen, gr.Model.Config.Vocab
		gr.MetricWeights = layers.NewParam(gr.G, MetricWeightsName, newDense(gr.Model.Dtype, []int{n, v}, make([]float64, n*v)))
		weighted := raise.Must(gorgonia.HadamardProd(gr.Logits, gr.MetricWeights)) // (B*T, V)
		metric = node("metric")(gorgonia.Sum(weighted, 0, 1))                      // scalar
	}
	wrt := make(gorgonia.Nodes, len(gr.Opts.Grads))
	for i, name := range gr.Opts.Grads {
		x, ok := gr.Activations[name]
		if !ok {
			raise.If(errors.Errorf("build: activation %s was not built", name))
		}
		wrt[i] = x
	}
	raise.If(gr.checkReaches(metric, wrt))
	// Grad differentiates with respect to inputs alone; Backpropagate, from
	// the same seed of 1, takes any node the metric depends on.
	grads, err := gorgonia.Backpropagate(gorgonia.Nodes{metric}, gorgonia.Nodes{gr.one()}, wrt)
	raise.If(errors.Wrap(err, "build: BuildOptions.Grads"))
	gr.actGrads = make(map[string]*gorgonia.Node, len(grads))
	for i, name := range gr.Opts.Grads {
		gr.actGrads[name] = grads[i]
	}
	roots := append(gorgonia.Nodes{gr.Loss, gr.Logits}, gr.cached()...)
	gr.G = gr.G.ExactSubgraphRoots(append(roots, grads...)...)
	raise.If(nameGradients(gr.G))
}

// checkReaches refuses an activation of wrt the metric does not read: one
// computed beside the forward for a reader (a head's result), through which
// no gradient flows.
func (gr *Graph) checkReaches(metric *gorgonia.Node, wrt gorgonia.Nodes) error {
	read := map[int64]bool{}
	for stack := []int64{metric.ID()}; len(stack) > 0; {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if read[id] {
			continue
		}
		read[id] = true
		for children := gr.G.From(id); children.Next(); {
			stack = append(stack, children.Node().ID())
		}
	}
	for i, x := range wrt {
		if !read[x.ID()] {
			return errors.Errorf("build: BuildOptions.Grads: %s is computed beside the forward, which does not read it: it has no gradient", gr.Opts.Grads[i])
		}
	}
	return nil
}

// one is the scalar 1 of the model's dtype, d metric / d metric.
func (gr *Graph) one() *gorgonia.Node {
	if gr.Model.Dtype == tensor.Float32 {
		return gr.G.AddNode(gorgonia.NewConstant(float32(1)))
	}
	return gr.G.AddNode(gorgonia.NewConstant(1.0))
}

// SetMetricWeights feeds the (B*T, V) weights w of the metric a graph
// built with Opts.MetricWeights differentiates, Σ Logits ⊙ w: a logit
// difference is +1 at the answer's logit and -1 at the wrong one's, at the
// position read. w is row-major (b*T + t, token).
func (gr *Graph) SetMetricWeights(w []float64) error {
	if gr.MetricWeights == nil {
		return errors.New("metric weights: the graph was built without BuildOptions.MetricWeights")
	}
	d := gr.MetricWeights.Value().(*tensor.Dense)
	if len(w) != d.Len() {
		return errors.Errorf("metric weights: %d values, want (B*T, V) = %v", len(w), d.Shape())
	}
	switch data := d.Data().(type) {
	case []float64:
		copy(data, w)
	case []float32:
		for i, x := range w {
			data[i] = float32(x)
		}
	}
	return nil
}

// ActivationGrad is the gradient the last run left at the named activation
// (the lab's name or TransformerLens's), one of Opts.Grads: d metric / d
// activation, the metric Loss or Σ Logits ⊙ MetricWeights, in the
// activation's layout and dtype. It belongs to the machine: read it before
// the next run.
func (gr *Graph) ActivationGrad(name string) (*tensor.Dense, error) {
	spec, err := gr.ActivationSpec(name)
	if err != nil {
		return nil, errors.Wrap(err, "activation gradient")
	}
	n, ok := gr.actGrads[spec.Name]
	if !ok {
		return nil, errors.Errorf("activation gradient %s: the graph was built without it in BuildOptions.Grads", spec.Name)
	}
	d, err := denseValue(n, "gradient of "+spec.Name)
	if err != nil {
		return nil, err
	}
	if !d.Shape().Eq(spec.Shape) {
		return nil, errors.Errorf("activation gradient %s: shape %v, want %v", spec.Name, d.Shape(), spec.Shape)
	}
	return d, nil
}

// gradNodes are the nodes of Opts.Grads' gradients, in their order.
func (gr *Graph) gradNodes() gorgonia.Nodes {
	var out gorgonia.Nodes
	for _, name := range gr.Opts.Grads {
		out = append(out, gr.actGrads[name])
	}
	return out
}

// wantsGrad reports whether the graph differentiates the activation.
func (gr *Graph) wantsGrad(name string) bool { return slices.Contains(gr.Opts.Grads, name) }
