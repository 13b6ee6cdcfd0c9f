package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// StreamKinds are the activations PatchStream patches by (layer,
// position), TransformerLens's get_act_patch_resid_pre and kin: rows of the
// residual stream and what each sublayer writes to it.
var StreamKinds = []string{"resid_pre", "resid_mid", "resid_post", "attn_out", "mlp_out"}

// HeadKinds are the activations PatchHeads patches by head, over every
// position or at one (query) position, TransformerLens's
// get_act_patch_attn_head_out_all_pos and kin: z (each head's output), q,
// k, v and the pattern.
var HeadKinds = []string{"z", "q", "k", "v", "pattern"}

// PatchName is TransformerLens's name of kind's activation in block l
// ("blocks.3.hook_resid_pre", "blocks.3.attn.hook_z").
func PatchName(kind string, l int) string {
	if slices.Contains(HeadKinds, kind) {
		return fmt.Sprintf("blocks.%d.attn.hook_%s", l, kind)
	}
	return fmt.Sprintf("blocks.%d.hook_%s", l, kind)
}

// PatchNames are the activations a clean run keeps for patching kind:
// kind's in every block, for RunWithCache.
func PatchNames(cfg model.Config, kind string) []string {
	names := make([]string, cfg.Layers)
	for l := range names {
		names[l] = PatchName(kind, l)
	}
	return names
}

// Metric is a patching metric, TransformerLens's patching_metric: one
// number of a run's logits (B*T, V), or an error when the logits are not
// what it reads.
type Metric func(logits Logits) (float64, error)

// LogitDiffMetric is the logit of answer minus that of wrong at the last
// of each sequence's seqLen positions, the mean over the sequences: the
// IOI demo's logit difference.
func LogitDiffMetric(seqLen, answer, wrong int) Metric {
	return func(logits Logits) (float64, error) {
		v, rows := logits.width(), logits.Shape[0]
		switch {
		case seqLen < 1 || rows%seqLen != 0:
			return 0, errors.Errorf("logit difference: %d rows of logits are not sequences of %d", rows, seqLen)
		case answer < 0 || answer >= v || wrong < 0 || wrong >= v:
			return 0, errors.Errorf("logit difference of tokens %d and %d: outside the vocabulary [0, %d)", answer, wrong, v)
		}
		var sum float64
		for b := range rows / seqLen {
			row := (b+1)*seqLen - 1
			sum += logits.At(row*v+answer) - logits.At(row*v+wrong)
		}
		return sum / float64(rows/seqLen), nil
	}
}

// LossMetric is the mean cross-entropy, in nats, of each of seqs' next
// tokens (every position but the last): the loss of the clean text, which
// patching from the clean run lowers back.
func LossMetric(seqs [][]int) Metric {
	return func(logits Logits) (float64, error) {
		t, v := len(seqs[0]), logits.width()
		if t < 2 || logits.Shape[0] != len(seqs)*t {
			return 0, errors.Errorf("loss: %d rows of logits for %d sequences of %d tokens (at least 2, for a next token)", logits.Shape[0], len(seqs), t)
		}
		var sum float64
		for b, seq := range seqs {
			for p := range t - 1 {
				if seq[p+1] < 0 || seq[p+1] >= v {
					return 0, errors.Errorf("loss: token %d at position %d of sequence %d is outside the vocabulary [0, %d)", seq[p+1], p+1, b, v)
				}
				row := logits.Block(b*t + p) // (V)
				sum += logSumExp(row) - row[seq[p+1]]
			}
		}
		return sum / float64(len(seqs)*(t-1)), nil
	}
}

// logSumExp is log(sum(exp(x))), computed from x's largest value.
func logSumExp(x []float64) float64 {
	top := slices.Max(x)
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - top)
	}
	return top + math.Log(sum)
}

// ActivationPatching is activation patching of one kind of activation, as
// TransformerLens's patching module has it: the metric of the corrupted
// run with one component's activation set to the clean run's, component
// by component.
type ActivationPatching struct {
	Kind      string // one of StreamKinds or HeadKinds
	Clean     float64
	Corrupted float64 // the metric on the clean and the corrupted run, unpatched
	// Values are the metric of each patched run, float64: (L, T) by layer
	// and position for StreamKinds; (L, H) by layer and head over every
	// position, or (L, H, T) at each (query) position, for HeadKinds (H
	// the kv heads for k and v when fewer). A component not patched (not
	// among the heads given) is NaN.
	Values Tensor
}

// PatchStream patches kind (one of StreamKinds) by (layer, position):
// each run is corrupt with block l's activation at position p (in every
// sequence) set to the clean run's, TransformerLens's
// get_act_patch_resid_pre, _resid_mid, _attn_out and _mlp_out (and
// resid_post). clean is the clean run, which kept PatchNames(kind) and
// its logits; corrupt are sequences of its shape. It patches the layers
// of hs (nil: every layer). progress, when not nil, hears the runs done
// of the total.
func PatchStream(clean *Cache, corrupt [][]int, kind string, metric Metric, hs ablation.Heads, progress func(done, total int)) (*ActivationPatching, error) {
	if !slices.Contains(StreamKinds, kind) {
		return nil, errors.Errorf("activation patching by layer and position: kind %s; want one of %s", msg.Quote(kind), strings.Join(StreamKinds, ", "))
	}
	return patchComponents(clean, corrupt, kind, metric, hs, false, progress)
}

// PatchHeads patches kind (one of HeadKinds) head by head: each run is
// corrupt with one head's activation of block l set to the clean run's at
// every position, or with byPosition at one (query) position,
// TransformerLens's get_act_patch_attn_head_out_all_pos (z) and
// get_act_patch_attn_head_out_by_pos, and their q, k, v and pattern twins.
// It patches the heads hs names (nil: every head; for k and v with fewer
// kv heads, those of hs' numbers below their count). clean, corrupt,
// metric and progress are PatchStream's.
func PatchHeads(clean *Cache, corrupt [][]int, kind string, byPosition bool, metric Metric, hs ablation.Heads, progress func(done, total int)) (*ActivationPatching, error) {
	if !slices.Contains(HeadKinds, kind) {
		return nil, errors.Errorf("activation patching by head: kind %s; want one of %s", msg.Quote(kind), strings.Join(HeadKinds, ", "))
	}
	return patchComponents(clean, corrupt, kind, metric, hs, byPosition, progress)
}

// patchComponents is PatchStream and PatchHeads: the corrupted run, then
// one run for each component.
func patchComponents(clean *Cache, corrupt [][]int, kind string, metric Metric, hs ablation.Heads, byPosition bool, progress func(done, total int)) (*ActivationPatching, error) {
	comps, shape, err := patchedComponents(clean.Model.Config, kind, byPosition, hs, clean.Batch.SeqLen)
	if err != nil {
		return nil, err
	}
	if len(comps) == 0 {
		return nil, errors.Errorf("activation patching of %s: the heads given (%v) leave nothing to patch (the model has %d %s heads a layer)", kind, hs, shape[1], kind)
	}
	p, err := newPatcher(clean, corrupt, kind)
	if err != nil {
		return nil, err
	}
	defer p.close()
	out := &ActivationPatching{Kind: kind}
	if out.Clean, err = metric(clean.Logits); err != nil {
		return nil, err
	}
	values := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range values {
		values[i] = math.NaN()
	}
	if out.Corrupted, err = p.run(metric, -1, nil); err != nil {
		return nil, err
	}
	for i, c := range comps {
		if progress != nil {
			progress(i, len(comps))
		}
		if values[c.at], err = p.run(metric, c.layer, p.elements(c.layer, c.head, c.pos)); err != nil {
			return nil, err
		}
	}
	if progress != nil {
		progress(len(comps), len(comps))
	}
	out.Values = newTensor(tensor.Float64, shape, values)
	return out, nil
}

// ActivationPatchWork is the forwards PatchStream or PatchHeads runs on b
// sequences of t tokens of cfg's model (kind, byPosition and hs as they
// take them): the corrupted run, then one a component.
func ActivationPatchWork(cfg model.Config, kind string, byPosition bool, hs ablation.Heads, b, t int) (Work, error) {
	comps, _, err := patchedComponents(cfg, kind, byPosition, hs, t)
	return Work{Forwards: 1 + len(comps), Tokens: b * t, Length: t}, err
}
