package report

import (
	"strings"
	"testing"

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

// TestCircuitsRefusedWhereTheWeightsDoNotFit: -circuits on Llama 3.1 8B's
// shape, whose composition and copying would take every attention matrix
// and both embeddings as float64 (19.1 GB; inspect was killed for want
// of memory), is refused up front in one line with the estimate; GPT-2
// small's shape (845 MB) and a view without -circuits pass.
func TestCircuitsRefusedWhereTheWeightsDoNotFit(t *testing.T) {
	err := checkCircuitsMemory(mapped8B(), true)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "(32 layers of 32 heads), needs an estimated 17.8 GiB (limit 8.0 GiB); -ablate works on the heads picked") {
		t.Errorf("-circuits on 8B: %v", err)
	}
	if err := checkCircuitsMemory(mapped8B(), false); err != nil {
		t.Errorf("no -circuits: %v", err)
	}
	gpt2 := model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072, QKVBias: true, OutBias: true, TieEmbeddings: true}
	if err := checkCircuitsMemory(gpt2, true); err != nil {
		t.Errorf("-circuits on GPT-2 small: %v", err)
	}
}
