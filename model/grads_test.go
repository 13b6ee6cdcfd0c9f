package model

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// TestActivationGradsMatchFiniteDifferences: d metric / d activation of
// every activation (but those refused) of hookFixtures' GPT-2, Llama and GPT-NeoX blocks (on
// both paths, float64), for the loss (the fused path) and for Σ logits ⊙ w
// with random w,
// equals central differences (m(x+h) - m(x-h)) / 2h, h = 1e-5, of the
// metric of forwards whose hook adds ±h to one entry of that activation,
// at three entries of each; relative error < 1e-6 of the largest of the
// two. The forwards read no gradient, so they are independent of the
// backward pass.
func TestActivationGradsMatchFiniteDifferences(t *testing.T) {
	for _, fixture := range []string{"mlp_2layer", "llama_style", "neox_parallel"} {
		m := torchModel(t, loadTorchFixture(t, fixture), tensor.Float64)
		rng := rand.New(rand.NewPCG(3, 4))
		weights := make([]float64, 8*m.Config.Vocab)
		for i := range weights {
			weights[i] = rng.NormFloat64()
		}
		for _, path := range layers.Paths {
			metrics := [][]float64{nil, weights}
			if path == layers.Gorgonia {
				metrics = metrics[1:] // the slow path's graphs: the logits' metric alone; the loss's cross-entropy is one op on both paths
			}
			for _, w := range metrics {
				name := fixture + "/" + string(path) + "/loss"
				if w != nil {
					name = fixture + "/" + string(path) + "/logits"
				}
				t.Run(name, func(t *testing.T) { gradsMatchDifferences(t, m, path, w) })
			}
		}
	}
}

// gradsMatchDifferences checks every activation's gradient of m on path,
// the metric the loss (w nil) or Σ logits ⊙ w.
func gradsMatchDifferences(t *testing.T, m *Model, path layers.Path, w []float64) {
	onPath := *m
	onPath.Config.Attention = string(path)
	var names []string
	for _, s := range m.Config.Activations(2, 4) {
		if !strings.HasSuffix(s.Name, ".attn.result") && !(m.Config.ParallelResidual && strings.HasSuffix(s.Name, ".scale")) { // refused: see TestActivationGradsRefused
			names = append(names, s.Name)
		}
	}
	g := buildOrFail(t, &onPath, BuildOptions{Batch: 2, SeqLen: 4, Grads: names, MetricWeights: w != nil})
	if w != nil {
		if err := g.SetMetricWeights(w); err != nil {
			t.Fatal(err)
		}
	}
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(7, 7)), 8, m.Config.Vocab)
	feedRun(t, g, tokens, targets, mask)
	const h = 1e-5
	for _, name := range names {
		d, err := g.ActivationGrad(name)
		if err != nil {
			t.Fatal(err)
		}
		grad := append([]float64(nil), d.Float64s()...)
		for _, i := range []int{0, len(grad) / 2, len(grad) - 1} {
			up := nudgedMetric(t, &onPath, name, i, h, w, tokens, targets, mask)
			down := nudgedMetric(t, &onPath, name, i, -h, w, tokens, targets, mask)
			fd := (up - down) / (2 * h)
			if e := math.Abs(grad[i] - fd); e > 1e-6*math.Max(1, math.Max(math.Abs(fd), math.Abs(grad[i]))) || math.IsNaN(grad[i]) {
				t.Errorf("%s[%d]: gradient %.9g, finite difference %.9g", name, i, grad[i], fd)
			}
		}
	}
}

// nudgedMetric is the metric of a forward of m whose hook adds by to entry
// i of the named activation.
func nudgedMetric(t *testing.T, m *Model, name string, i int, by float64, w []float64, tokens, targets []int, mask []float64) float64 {
	t.Helper()
	g := buildOrFail(t, m, BuildOptions{Batch: 2, SeqLen: 4, Hooks: []string{name}})
	nudge := func(_ string, x *tensor.Dense) (*tensor.Dense, error) {
		x.Float64s()[i] += by
		return x, nil
	}
	if err := g.SetHook(name, nudge); err != nil {
		t.Fatal(err)
	}
	feedRun(t, g, tokens, targets, mask)
	if w == nil {
		return lossOf(t, g)
	}
	sum := 0.0
	for j, l := range floats(t, g.Logits) {
		sum += l * w[j]
	}
	return sum
}

func buildOrFail(t *testing.T, m *Model, opts BuildOptions) *Graph {
	t.Helper()
	g, err := Build(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestActivationGradsRefused: Grads with Train, MetricWeights without
// Grads, an activation the forward does not read (a head's result) or
// a norm's scale with the parallel residual (GPT-NeoX's two norms share it), and a gradient or metric weights the graph was not built with are
// refused on one line.
func TestActivationGradsRefused(t *testing.T) {
	m := torchModel(t, loadTorchFixture(t, "mlp_2layer"), tensor.Float64)
	for opts, want := range map[*BuildOptions]string{
		{Batch: 1, SeqLen: 2, Grads: []string{"blocks.0.hook_resid_pre"}, Train: true}: "not both",
		{Batch: 1, SeqLen: 2, MetricWeights: true}:                                     "without Grads",
		{Batch: 1, SeqLen: 2, Grads: []string{"blocks.9.hook_resid_pre"}}:              "blocks.9",
		{Batch: 1, SeqLen: 2, Grads: []string{"blocks.0.attn.hook_result"}}:            "blocks.0.attn.result is computed beside the forward",
	} {
		if _, err := Build(m, *opts); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line with %q", *opts, err, want)
		}
	}
	neox := torchModel(t, loadTorchFixture(t, "neox_parallel"), tensor.Float64)
	if _, err := Build(neox, BuildOptions{Batch: 1, SeqLen: 2, Grads: []string{"blocks.0.ln2.hook_scale"}}); err == nil || !strings.Contains(err.Error(), "computes their scale once") {
		t.Errorf("GPT-NeoX's shared norm scale: error %v", err)
	}
	g := buildOrFail(t, m, BuildOptions{Batch: 1, SeqLen: 2, Grads: []string{"blocks.0.hook_resid_pre"}})
	if _, err := g.ActivationGrad(ResidPost(0)); err == nil || !strings.Contains(err.Error(), "without it in BuildOptions.Grads") {
		t.Errorf("gradient not built: error %v", err)
	}
	if err := g.SetMetricWeights(make([]float64, 2*m.Config.Vocab)); err == nil || !strings.Contains(err.Error(), "without BuildOptions.MetricWeights") {
		t.Errorf("metric weights not built: error %v", err)
	}
}
