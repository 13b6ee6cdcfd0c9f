package analysis

import (
	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
)

// streamKinds are the StreamKinds cfg's model has (no resid_mid with the
// parallel residual, no mlp_out without MLPs).
func streamKinds(cfg model.Config) []string {
	have := map[string]bool{}
	for _, s := range cfg.Activations(1, 1) {
		have[s.TL] = true
	}
	var kinds []string
	for _, kind := range StreamKinds {
		if have[PatchName(kind, 0)] {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// AttributionPatching is attribution patching (Neel Nanda's): the effect on
// the metric of patching each activation of the corrupted run into the
// clean run, estimated to first order from one clean forward and backward
// and one corrupted forward as (corrupted - clean) · d metric / d
// activation at the clean run, summed over the patched entries. Heads[l][h]
// estimates patching head h's z (attn.hook_z) of layer l at every
// position, Streams[kind][l][t] patching block l's kind (StreamKinds) at
// position t, each over every sequence of the batch. An estimate is
// linear where patching is not: good for ranking and for a corruption of
// a few tokens (a minimal pair), poor where the metric bends hard, such
// as a trained model's loss at tokens it cannot predict; activation
// patching gives the exact figure of the few components it picks out.
type AttributionPatching struct {
	Metric    string                 `json:"metric"`    // PatchMetric.String
	Clean     float64                `json:"clean"`     // the metric of the clean run
	Corrupted float64                `json:"corrupted"` // of the corrupted run (a loss: on its own next tokens)
	Heads     [][]float64            `json:"heads"`     // [layer][head]
	Streams   map[string][][]float64 `json:"streams"`   // [kind][layer][position]
}

// AttributionPatch estimates the effect of patching every head's z and
// every stream activation at every position from the corrupted sequences
// into the clean ones, of the same shape, on metric (AttributionPatching):
// the clean sequences run once forward and backward (RunTokensWithGrads),
// the corrupted ones once forward.
func AttributionPatch(m *model.Model, clean, corrupted [][]int, metric PatchMetric) (*AttributionPatching, error) {
	if err := sameShape(clean, corrupted); err != nil {
		return nil, err
	}
	names := attributionNames(m.Config)
	cc, err := RunTokensWithGrads(m, clean, metric, names...)
	if err != nil {
		return nil, errors.Wrap(err, "the clean run")
	}
	bad, err := RunTokensWithCache(m, corrupted, names...)
	if err != nil {
		return nil, errors.Wrap(err, "the corrupted run")
	}
	a := &AttributionPatching{Metric: metric.String(), Clean: metric.Of(cc), Corrupted: metric.Of(bad), Streams: map[string][][]float64{}}
	for l := range m.Config.Layers {
		heads, err := attribute(cc, bad, PatchName("z", l), headAxes)
		if err != nil {
			return nil, err
		}
		a.Heads = append(a.Heads, heads)
		for _, kind := range streamKinds(m.Config) {
			byPos, err := attribute(cc, bad, PatchName(kind, l), positionAxes(len(clean[0])))
			if err != nil {
				return nil, err
			}
			a.Streams[kind] = append(a.Streams[kind], byPos)
		}
	}
	return a, nil
}

// attributionNames are the activations AttributionPatch reads: every
// layer's z and stream activations.
func attributionNames(cfg model.Config) []string {
	var names []string
	for l := range cfg.Layers {
		names = append(names, PatchName("z", l))
		for _, kind := range streamKinds(cfg) {
			names = append(names, PatchName(kind, l))
		}
	}
	return names
}

// sameShape refuses corrupted sequences that are not as many and as long
// as the clean ones: patching reads one run's activation into the other's
// place.
func sameShape(clean, corrupted [][]int) error {
	if len(clean) != len(corrupted) {
		return errors.Errorf("%d clean sequences and %d corrupted: patching needs one corrupted sequence for each clean one", len(clean), len(corrupted))
	}
	for i := range clean {
		if len(clean[i]) != len(corrupted[i]) {
			return errors.Errorf("clean sequence %d has %d tokens and its corruption %d: patching needs them of one length", i, len(clean[i]), len(corrupted[i]))
		}
	}
	return nil
}

// axes maps an activation's shape and a flat index into it to the
// component the entry belongs to, and says how many components there are.
type axes func(shape []int) (components int, of func(i int) int)

// headAxes: z (B, H, T, d) by head.
func headAxes(shape []int) (int, func(int) int) {
	h, t, d := shape[1], shape[2], shape[3]
	return h, func(i int) int { return i / (t * d) % h }
}

// positionAxes: a stream activation (B*T, D) by position, of t positions.
func positionAxes(t int) axes {
	return func(shape []int) (int, func(int) int) {
		d := shape[1]
		return t, func(i int) int { return i / d % t }
	}
}

// attribute is Σ (corrupted - clean) · grad over the entries of the
// activation name, by component.
func attribute(clean, corrupted *Cache, name string, by axes) ([]float64, error) {
	x, err := clean.Get(name)
	if err != nil {
		return nil, err
	}
	y, err := corrupted.Get(name)
	if err != nil {
		return nil, err
	}
	g, err := clean.Grad(name)
	if err != nil {
		return nil, err
	}
	n, of := by(x.Shape)
	out := make([]float64, n)
	for i := range x.Len() {
		out[of(i)] += (y.At(i) - x.At(i)) * g.At(i)
	}
	return out, nil
}

// Denoising is kind's estimates ("z" or one of StreamKinds) as activation
// patching reports its figures (PatchHeads, PatchStream), from a run of
// AttributionPatch with the roles swapped, the corrupted sequences as the
// clean ones: the clean run's activations patched into the corrupted run.
// Clean is then the metric of the clean sequences (a.Corrupted),
// Corrupted that of the corrupted ones (a.Clean), and Values the corrupted
// metric plus each estimate, (L, H) for z and (L, T) for a stream kind.
func (a *AttributionPatching) Denoising(kind string) (*ActivationPatching, error) {
	rows := a.Heads
	if kind != "z" {
		rows = a.Streams[kind]
	}
	if rows == nil {
		return nil, errors.Errorf("attribution patching estimated no %s; it estimates z and %v, those the model has", kind, StreamKinds)
	}
	var values []float64
	for _, row := range rows {
		for _, e := range row {
			values = append(values, a.Clean+e)
		}
	}
	shape := []int{len(rows), len(rows[0])}
	return &ActivationPatching{Kind: kind, Clean: a.Corrupted, Corrupted: a.Clean, Values: newTensor(tensor.Float64, shape, values)}, nil
}
