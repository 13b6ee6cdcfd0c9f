package report

import (
	"strings"
	"testing"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
)

// mapped8B is llama8B with its matrices mapped, as inspect opens its BF16
// files.
func mapped8B() model.Config {
	c := llama8B
	for _, spec := range c.ParamSpecs() {
		if len(spec.Shape) == 2 {
			c.MappedWeights += float64(spec.Shape[0]) * float64(spec.Shape[1])
		}
	}
	return c
}

// TestEightBViewsFit: on Llama 3.1 8B's shape a view of 256 tokens with
// every map and -summary's head scoring on its default examples pass the
// memory checks (a forward run once holds two blocks' values, not every
// block's: inspect peaked at 2.1 GiB of anonymous memory on the view),
// while 1,024 tokens, whose maps alone are 25 GB as float64 and text, are
// refused with the estimate.
func TestEightBViewsFit(t *testing.T) {
	c := mapped8B()
	if err := checkSequenceMemory(c, 256, "-tokens"); err != nil {
		t.Errorf("256 tokens: %v", err)
	}
	if err := checkMemory(c, 4, 100, 8); err != nil {
		t.Errorf("-examples 8 of 100 tokens: %v", err)
	}
	err := checkSequenceMemory(c, 1024, "-tokens")
	if err == nil || !strings.Contains(err.Error(), "-tokens: inspecting 1024 tokens (attention maps of 32 layers x 32 heads x 1024 x 1024 positions) needs an estimated 2") {
		t.Errorf("1024 tokens: %v", err)
	}
}

// TestCircuitsRefusedWhereTheWeightsDoNotFit: -circuits on every head of
// Llama 3.1 8B's shape, whose heads' factors alone are 17.2 GB as float64 and its copying (W_E^T W_U from
// both embeddings in float64) 12.6 GB more,
// is refused up front in one line with the estimate and how to pick fewer;
// two heads of layers 0 and 31 (what the picked work holds: a third of a
// GB) pass, as do GPT-2 small's shape and a view without -circuits.
func TestCircuitsRefusedWhereTheWeightsDoNotFit(t *testing.T) {
	c := mapped8B()
	all := every(c.Layers, c.Heads)
	err := checkCircuitsMemory(c, true, all)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "-circuits: composition, copying and the attribution on 32 layers of 32 heads picked (32 layers of 32 heads in all) needs an estimated 28.4 GiB") || !strings.HasSuffix(err.Error(), "(limit 8.0 GiB); pick fewer heads with -layer and -head (e.g. -layer 0,5-7 -head 3)") {
		t.Errorf("-circuits on every head of 8B: %v", err)
	}
	picked := Selection{Layers: []int{0, 31}, Heads: []int{0, 1}}
	if err := checkCircuitsMemory(c, true, picked); err != nil {
		t.Errorf("-circuits -layer 0,31 -head 0-1 on 8B: %v", err)
	}
	if est := analysis.CircuitsBytes(c, picked.Layers, picked.Heads); est > 1<<30 {
		t.Errorf("-circuits -layer 0,31 -head 0-1 on 8B: estimated %.0f bytes, want under 1 GiB", est)
	}
	if err := checkCircuitsMemory(c, false, all); err != nil {
		t.Errorf("no -circuits: %v", err)
	}
	gpt2 := model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072, QKVBias: true, OutBias: true, TieEmbeddings: true}
	if err := checkCircuitsMemory(gpt2, true, every(gpt2.Layers, gpt2.Heads)); err != nil {
		t.Errorf("-circuits on GPT-2 small: %v", err)
	}
}
