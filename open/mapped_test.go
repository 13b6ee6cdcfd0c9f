package open

import (
	"testing"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
)

// TestMapAndUsePath: with Map a BF16 Hugging Face model opens with its
// matrices in their files; -path gorgonia widens them into float32, since
// the Gorgonia path reads float32 only, and the model then builds there;
// without Map nothing is mapped. A fine-tuning open never maps.
func TestMapAndUsePath(t *testing.T) {
	dir := copyFixture(t, "mistral")
	op, err := Open(dir, Options{Map: true})
	if err != nil {
		t.Fatal(err)
	}
	if !op.Model.HasStored() {
		t.Fatal("Map: no weight kept in its file")
	}
	if err := op.UsePath(string(layers.Gorgonia)); err != nil {
		t.Fatal(err)
	}
	if op.Model.HasStored() || op.Model.Config.MappedWeights != 0 {
		t.Fatalf("-path gorgonia: stored weights %t, MappedWeights %v; want none", op.Model.HasStored(), op.Model.Config.MappedWeights)
	}
	if _, err := model.Build(op.Model, model.BuildOptions{Batch: 1, SeqLen: 4}); err != nil {
		t.Fatalf("building the widened model on the gorgonia path: %v", err)
	}
	for name, o := range map[string]Options{"without Map": {}, "fine-tuning": {Map: true, digests: true}} {
		op, err := Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if op.Model.HasStored() {
			t.Errorf("%s: a weight kept in its file", name)
		}
	}
}
