package train

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
)

// TestTrainMemoryPartsAreWhatAStepHolds holds model.Config.TrainMemory's
// fixed parts against what a float32 training step of a tiny model holds
// after it has run: the weights' bytes, the distinct memory of every
// gradient the replicas hold (the whole batch's sum written over the first
// part's, so two sets, not three) and Adam's moments. The parts that vary
// within a step (activations, logits, copies) are held against the
// measured peak RSS by cmd/bench -configs gpt2 (docs/benchmarks.md).
func TestTrainMemoryPartsAreWhatAStepHolds(t *testing.T) {
	cfg := replicaConfig(true, layers.Fused)
	cfg.TieEmbeddings, cfg.LMBias = true, false
	m := replicaModel(t, cfg, tensor.Float32)
	const batch, seqLen = 4, 6
	split, err := BuildReplicas(m, batch, seqLen)
	if err != nil {
		t.Fatal(err)
	}
	defer split.Close()
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 2)), batch*seqLen, cfg.Vocab)
	if err := split.Feed(tokens, targets, mask); err != nil {
		t.Fatal(err)
	}
	runOnce(t, split)
	adam := NewAdam(m.Params, 0.9, 0.999, 1e-8, 0.1)
	want := cfg.TrainMemory(batch, 0)

	weights := 0
	for _, p := range m.Params {
		weights += int(p.Value.MemSize())
	}
	held := map[uintptr]int{} // each gradient's memory, counted once
	sets := [][]*tensor.Dense{}
	for _, g := range split.parts {
		grads, err := g.Gradients()
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, grads)
	}
	sum, err := split.Gradients()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range append(sets, sum) {
		for _, d := range set {
			held[d.Uintptr()] = int(d.MemSize())
		}
	}
	gradients := 0
	for _, n := range held {
		gradients += n
	}
	moments := 0
	for i := range adam.M {
		moments += 8 * (len(adam.M[i]) + len(adam.V[i]))
	}
	for _, c := range []struct {
		part      string
		got, want float64
	}{
		{"weights", float64(weights), want.Weights},
		{"gradients", float64(gradients), want.Gradients},
		{"moments", float64(moments), want.Moments},
	} {
		if c.got != c.want {
			t.Errorf("%s: a step holds %v bytes, TrainMemory counts %v", c.part, c.got, c.want)
		}
	}
	if want.Replicas != len(split.parts) {
		t.Errorf("TrainMemory counts %d replicas, the step has %d", want.Replicas, len(split.parts))
	}
}
