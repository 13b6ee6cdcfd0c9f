package report

import (
	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/model"
)

// oneARun is how activation patching makes its figures, for the views.
const oneARun = "one component a run"

// attributionRuns are the forwards attribution patching runs, counted
// as such: the corrupted input forward and backward (a backward about
// two forwards), the clean input forward, and with the loss one more
// forward of the corrupted input for its gradient at the logits.
const attributionRuns = 5

// attributionPatchKinds are attribution patching's kinds (-patch
// attribution-z, attribution-resid_pre, ...): the figures activation
// patching's kind of the same name gives, estimated all at once from one
// forward and backward of the corrupted input and one forward of the
// clean (analysis.AttributionPatch, the roles swapped to patch the clean
// run into the corrupted one, as the other kinds do). They estimate every
// head and layer, whatever -layer and -head pick; the views show those
// picked.
func attributionPatchKinds() []PatchKind {
	var kinds []PatchKind
	for _, kind := range append([]string{"z"}, analysis.StreamKinds...) {
		axes := []string{"layer", "pos"}
		if kind == "z" {
			axes = []string{"layer", "head"}
		}
		kinds = append(kinds, PatchKind{Name: "attribution-" + kind, Activation: anyBlock(kind), Axes: axes,
			How: "estimated by attribution patching, (clean - corrupted) · the metric's gradient at the corrupted run: one forward and backward of the corrupted input, one forward of the clean",
			Work: func(_ model.Config, _ ablation.Heads, t int) (analysis.Work, error) {
				return analysis.Work{Forwards: attributionRuns, Tokens: t, Length: t}, nil
			},
			Estimate: func(m *model.Model, clean, corrupt [][]int, metric analysis.PatchMetric, progress func(done, total int)) (*analysis.ActivationPatching, error) {
				a, err := analysis.AttributionPatch(m, corrupt, clean, metric)
				if err != nil {
					return nil, err
				}
				if progress != nil {
					progress(attributionRuns, attributionRuns)
				}
				return a.Denoising(kind)
			}})
	}
	return kinds
}
