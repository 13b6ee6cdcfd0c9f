package model

// MaxMemory is the largest estimated footprint (EstimateBytes) train and
// inspect accept. It keeps a typo such as batch_size: 32000 from swapping a
// laptop to a halt after the graph is half built.
const MaxMemory = 8 << 30

// EstimateBytes is a rough estimate, in bytes, of the memory training this
// model in float32 (as package train does) takes on the fused path, whose
// lean machine keeps the value of every node: per weight, its value, its
// gradient and the
// two float64 Adam moments; the forward and backward activations of a
// training graph of trainBatch sequences; and a forward-only evaluation
// graph of evalBatch sequences (0: none).
// Per block a graph holds about 12 (B·T, D) tensors for attention
// (projections, head split, transposes, output, residual) plus 4 (B, H, T, T)
// ones (scores, scaled, softmax, dropout), and about 8 (B·T, D) and 8 (B·T, F)
// more with an MLP (LayerNorms, GELU's intermediates); embeddings and the LM
// head add 4 (B·T, D) and 4 (B·T, V). The backward pass is counted as big as
// the forward. Vocab and Context must be set. The gorgonia path writes
// LayerNorm and GELU as chains of element-wise nodes, each keeping its value:
// it takes up to about 1.5x this (L4 of cmd/bench: ~430 MiB of values
// against the estimate's ~300 MB), which MaxMemory's margin covers.
func (c Config) EstimateBytes(trainBatch, evalBatch int) float64 {
	m := c
	// Every block has the same tensors, so the count is linear in Layers;
	// listing the specs of 0 and 1 layers avoids a slice per block for an
	// absurd layer count.
	size := func(layers int) float64 {
		one := m
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
	params := size(0) + float64(m.Layers)*(size(1)-size(0))
	t, d, h, f, v := float64(m.Context), float64(m.DModel), float64(m.Heads), float64(m.DFF), float64(m.Vocab)
	forward := func(batch int) float64 {
		b := float64(batch)
		block := 12*b*t*d + 4*b*h*t*t
		if m.MLP {
			block += 8*b*t*d + 8*b*t*f
		}
		return float64(m.Layers)*block + 4*b*t*d + 4*b*t*v
	}
	activations := 2*forward(trainBatch) + forward(evalBatch)
	const elem = 4 // bytes of a float32
	return params*(2*elem+16) + activations*elem
}

// evalBatch is the batch of Run's evaluation graph.

// MaxEvalBatch caps the batch of the evaluation graph; a larger held-out set
// is evaluated in equal chunks of at most this many rows (EvalBatch): train's evaluation and inspect's ablation. At 256
// rows every op of the graph is past the size where its per-call costs
// matter: on configs/sort.yaml's 1000 rows, one chunk of 1000 was no faster
// than four of 250 (its activations outgrow the caches), and a larger cap
// would only raise the memory estimate (EstimateBytes) of big models.
const MaxEvalBatch = 256

// EvalBatch is the batch of the evaluation graph for a held-out set of size
// rows: the set in the fewest chunks of at most MaxEvalBatch rows, cut as
// evenly as possible, so the last chunk carries as few padding rows as can be
// (none when the chunk count divides size).
func EvalBatch(size int) int {
	if size <= 0 {
		return 0
	}
	chunks := (size + MaxEvalBatch - 1) / MaxEvalBatch
	return (size + chunks - 1) / chunks
}
