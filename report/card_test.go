package report

import (
	"testing"

	"github.com/attnscope/attnscope/model"
)

// TestCardIsTheViews: model.Config.Card, which sample notes, is the
// terminal view's model line and the page's (render's Description of the
// model report builds), for the original design and a Gemma 2-like model.
func TestCardIsTheViews(t *testing.T) {
	for _, cfg := range []model.Config{
		{Vocab: 9, Context: 8, DModel: 16, Heads: 2, Layers: 1, MLP: true, DFF: 32, TieEmbeddings: true},
		{Vocab: 9, Context: 8, DModel: 16, Heads: 2, HeadDim: 12, KVHeads: 1, Layers: 2, MLP: true, DFF: 32, Norm: model.NormRMS, NormOffset: true,
			NormPlacement: model.PlacementSandwich, Activation: model.ActivationGeGLU, Position: model.PositionRope, Window: 3,
			GlobalLayers: model.NewLayerList(1), AttnSoftcap: 50, FinalSoftcap: 30, EmbedScale: 4},
	} {
		if card, view := cfg.Card(), (&Report{Config: cfg}).model().Description(); card != view {
			t.Errorf("Card() %q, the views' model line %q", card, view)
		}
	}
}
