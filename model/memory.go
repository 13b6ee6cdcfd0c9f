package model

import (
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/layers"
	"github.com/pkg/errors"
)

// CheckMemory refuses an estimate (EstimateBytes and kin) above MaxMemory,
// with the one wording every such refusal has: "<what> needs an estimated
// 9.1 GiB (limit 8.0 GiB); <lower>", lower saying what to reduce.
func CheckMemory(est float64, what, lower string) error {
	if est <= MaxMemory {
		return nil
	}
	return errors.Errorf("%s needs an estimated %s (limit %s); %s", what, msg.Bytes(est), msg.Bytes(MaxMemory), lower)
}

// MaxMemory is the largest estimated footprint (EstimateBytes) train and
// inspect accept. It keeps a typo such as batch_size: 32000 from swapping a
// laptop to a halt after the graph is half built.
const MaxMemory = 8 << 30

// EstimateBytes is a rough estimate, in bytes, of the memory training this
// model in float32 takes on the fused path when a lean machine keeps the
// value of every node (package train's runs, on one-shot machines, are
// estimated by TrainMemory; this stays the bound of the forward graphs
// that keep every value: generation, ablation): per weight, its value, its
// gradient and the
// two float64 Adam moments; the forward and backward activations of a
// training graph of trainBatch sequences; and a forward-only evaluation
// graph of evalBatch sequences (0: none).
// attn_softcap adds a (B, H, T, T) tensor per block, embed_scale a (B·T, D)
// and final_softcap a (B·T, V) one (scoresValues).
// Per block a graph holds about 12 (B·T, D) tensors for attention
// (projections, head split, transposes, output, residual; 3 more for
// QK-norm's copy of the projection) plus 4 (B, H, T, T)
// ones (scores, scaled, softmax, dropout), and about 8 (B·T, D) and 8 (B·T, F)
// more with an MLP (norms, GELU's intermediates; 12 (B·T, F) for SwiGLU's
// three hidden tensors where GELU has two); embeddings and the LM
// head add 4 (B·T, D) and 4 (B·T, V). The backward pass is counted as big as
// the forward. Vocab and Context must be set. The gorgonia path writes
// LayerNorm and GELU as chains of element-wise nodes, each keeping its value:
// it takes up to about 1.5x this (L4 of cmd/bench: ~430 MiB of values
// against the estimate's ~300 MB), which MaxMemory's margin covers.
func (c Config) EstimateBytes(trainBatch, evalBatch int) float64 {
	activations := 2*c.forwardValues(trainBatch) + c.forwardValues(evalBatch)
	const elem = 4 // bytes of a float32
	return c.HeldParamCount()*(2*elem+16) + activations*elem
}

// InferenceBytes is a rough estimate, in bytes, of the memory one float32
// forward of batch sequences of Context positions takes on the fused path:
// the weights held in float32 (HeldParamCount) and the values of the
// forward graph (EstimateBytes' counts, without gradients or Adam
// moments).
func (c Config) InferenceBytes(batch int) float64 {
	const elem = 4
	return (c.HeldParamCount() + c.forwardValues(batch)) * elem
}

// ViewBytes is a rough estimate, in bytes, of the memory one float32
// forward of batch sequences of Context positions run once takes on the
// fused path (Graph.NewOneShotMachine, what inspect's views run): the
// weights held (HeldParamCount), what the run keeps to its end (the
// logits and, with maps, every layer's attention weights, (B, H, T, T)
// each) and what it holds on the way, which the machine lets go of once
// nothing reads it: two blocks' values (EstimateBytes' counts: the block
// running and the one before it) and the embeddings' and the head's. On
// Llama 3.1 8B's shape over 256 tokens with maps it gives 1.4 GB where
// inspect's default view peaked at 1.0 GiB of anonymous memory
// (docs/pretrained.md's memory table).
func (c Config) ViewBytes(batch int, maps bool) float64 {
	b, t := float64(batch), float64(c.Context)
	values := c.HeldParamCount() + 2*c.blockValues(batch) + c.outerValues(batch)
	if maps {
		values += float64(c.Layers) * b * float64(c.Heads) * t * t
	}
	const elem = 4
	return values * elem
}

// forwardValues counts the values of a forward graph of batch sequences
// (see EstimateBytes).
func (c Config) forwardValues(batch int) float64 {
	return float64(c.Layers)*c.blockValues(batch) + c.outerValues(batch)
}

// blockValues counts the values of one block of a forward graph of batch
// sequences (see EstimateBytes).
func (c Config) blockValues(batch int) float64 {
	t, d, h, f := float64(c.Context), float64(c.DModel), float64(c.Heads), float64(c.DFF)
	b, inner := float64(batch), c.attentionWidth()
	block := 6*b*t*d + 6*b*t*inner + 4*b*h*t*t
	if c.QKNorm {
		block += 3 * b * t * inner
	}
	if c.MLP {
		hidden := 8.0 // (B·T, F) tensors: GELU's input and output and their intermediates
		if c.Gated() {
			hidden = 12 // a gate, an up and their product where GELU has two
		}
		block += (8+c.normsTensors())*b*t*d + hidden*b*t*f
	}
	return block
}

// outerValues counts the values of a forward graph of batch sequences
// outside its blocks: the embeddings, the LM head and what the parts that
// scale or cap scores add (see EstimateBytes).
func (c Config) outerValues(batch int) float64 {
	b, t := float64(batch), float64(c.Context)
	return 4*b*t*float64(c.DModel) + 4*b*t*float64(c.Vocab) + c.scoresValues(b, t)
}

// attentionWidth is H·d, the width of the attention's projections, heads
// and merged context: D unless head_dim sets d apart from D/H. Of the
// twelve values per position and layer a block's forward keeps, six are
// these (q, k, v, their heads, the context and its merge), six are D wide.
func (c Config) attentionWidth() float64 { return float64(c.Heads * c.DHead()) }

// ParamCount is the number of weights of the model. Every block has the
// same tensors, so the count is linear in Layers; listing the specs of 0 and
// 1 layers avoids a slice per block for an absurd layer count.
func (c Config) ParamCount() float64 {
	size := func(layers int) float64 {
		one := c
		one.Layers = layers
		total := 0.0
		for _, spec := range one.ParamSpecs() {
			n := 1.0
			for _, s := range spec.Shape {
				n *= float64(s)
			}
			total += n
		}
		return total
	}
	return size(0) + float64(c.Layers)*(size(1)-size(0))
}

// HeldParamCount is the number of weights the model holds as values of its
// own: ParamCount less those kept mapped in their files (MappedWeights),
// which the estimates leave to the residency check.
func (c Config) HeldParamCount() float64 { return c.ParamCount() - c.MappedWeights }

// DecodeBytes is a rough estimate, in bytes, of the memory a Decoder of m
// takes for rows sequences to reach positions positions: the weights it
// holds (HeldParamCount: not those mapped from their files); per
// row, a step's activations at one position; and per row and position, in
// every layer, the cache (KVPerToken values) and what a step computes over
// the whole cache. The fused path's op reads the cache in place (nothing
// more); the Gorgonia path appends the new slot to a copy of the cache
// (KVPerToken again); latent attention appends to the latents and
// up-projects, transposes and splits keys and values from them (2r + 6·D);
// both of these add the scores and weights (2·H per layer) and the mask's
// bias (H, once), and with attn_softcap the cap's nodes (3·H per layer);
// final_softcap adds the capped logits per row (decodeScoresValues). A growing cache (NewGrowingDecoder) holds its previous
// graph, at least half its size, while it copies it, so the part that
// grows with the positions counts twice. The arithmetic is float64: an
// absurd count gives an absurd figure, never an overflow.
func (m *Model) DecodeBytes(rows, positions int) float64 {
	c := m.Config
	d, h, f, v, kv := float64(c.DModel), float64(c.Heads), float64(c.DFF), float64(c.Vocab), float64(c.KVPerToken())
	perLayer, shared := kv, 0.0 // values per row and position
	path, _ := c.Path()
	switch {
	case c.KVLatent > 0:
		perLayer += 2*float64(c.KVLatent) + 6*d + 2*h
		shared = h
	case path == layers.Gorgonia:
		perLayer += kv + 2*h
		shared = h
	}
	step := 6*d + 6*c.attentionWidth() // a step's activations per row and layer, as EstimateBytes counts a position
	if c.MLP {
		step += (8+c.normsTensors())*d + 8*f
	}
	layerCount, b := float64(c.Layers), float64(rows)
	capped, capRow := c.decodeScoresValues(path)
	perLayer += capped
	perRow := layerCount*step + 4*d + 4*v + capRow + 2*float64(positions)*(layerCount*perLayer+shared)
	return float64(m.Dtype.Size()) * (c.HeldParamCount() + b*perRow)
}

// evalBatch is the batch of Run's evaluation graph.

// MaxEvalBatch caps the batch of the evaluation graph; a larger held-out set
// is evaluated in equal chunks of at most this many rows (EvalBatch): train's
// evaluation and inspect's ablation. At 256 rows every op of the graph is
// past the size where its per-call costs matter: on configs/sort.yaml's 1000
// rows, one chunk of 1000 was no faster than four of 250 (its activations
// outgrow the caches), and a larger cap would only raise the memory estimate
// (EstimateBytes) of big models.
const MaxEvalBatch = 256

// MaxEvalPositions caps the positions (rows × sequence length) of a chunk as
// well: the graph keeps every activation of a chunk for the whole run, so
// long sequences take fewer rows. 256 rows of 32 positions keep every toy
// task's chunks (and so its figures) as they were; configs/text.yaml's 256
// windows of 64 characters go in two chunks of 128, and its evaluation graph
// from 350 to 175 MB.
const MaxEvalPositions = MaxEvalBatch * 32

// EvalBatch is the batch of the evaluation graph for a held-out set of size
// rows of seqLen positions: the set in the fewest chunks of at most
// MaxEvalBatch rows and MaxEvalPositions positions, cut as evenly as
// possible, so the last chunk carries as few padding rows as can be (none
// when the chunk count divides size).
func EvalBatch(size, seqLen int) int {
	if size <= 0 {
		return 0
	}
	most := max(1, min(MaxEvalBatch, MaxEvalPositions/max(seqLen, 1)))
	chunks := (size + most - 1) / most
	return (size + chunks - 1) / chunks
}
