package train

import (
	"math/rand/v2"
	"runtime"
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
	want := cfg.TrainMemory(batch, 0, 8)

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
	moments := func(dtype tensor.Dtype) float64 {
		adam, n := NewAdam(m.Params, dtype, 0.9, 0.999, 1e-8, 0.1), 0
		for i := range adam.M {
			n += int(adam.M[i].MemSize() + adam.V[i].MemSize())
		}
		return float64(n)
	}
	for _, c := range []struct {
		part      string
		got, want float64
	}{
		{"weights", float64(weights), want.Weights},
		{"gradients", float64(gradients), want.Gradients},
		{"float64 moments", moments(tensor.Float64), want.Moments},
		{"float32 moments", moments(tensor.Float32), cfg.TrainMemory(batch, 0, 4).Moments},
	} {
		if c.got != c.want {
			t.Errorf("%s: a step holds %v bytes, TrainMemory counts %v", c.part, c.got, c.want)
		}
	}
	if want.Replicas != len(split.parts) {
		t.Errorf("TrainMemory counts %d replicas, the step has %d", want.Replicas, len(split.parts))
	}
}

// TestReplicasStepAllocatesNoTensor: once a step has run, the next steps
// write into the memory the one-shot machines let go of, so a step
// allocates less than one logits tensor of a part (they each allocated a
// new (B·T/2, V) one while a free tensor handed to a bound output was
// dropped). On GPT-2 small's shape that was 51 MB of garbage a step.
func TestReplicasStepAllocatesNoTensor(t *testing.T) {
	cfg := replicaConfig(true, layers.Fused)
	cfg.Vocab, cfg.Dropout = 2000, 0
	m := replicaModel(t, cfg, tensor.Float32)
	const batch, seqLen, steps = 4, 6, 5
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
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range steps {
		runOnce(t, split)
	}
	runtime.ReadMemStats(&after)
	perStep := float64(after.TotalAlloc-before.TotalAlloc) / steps
	if logits := float64(4 * batch / 2 * seqLen * cfg.Vocab); perStep >= logits {
		t.Errorf("a step allocates %.0f bytes, at least a part's logits (%.0f)", perStep, logits)
	}
}
