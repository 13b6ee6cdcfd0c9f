package model

import "testing"

// TestEstimateBytes pins the estimate for train's default model (copy task of
// length 8 over 16 symbols: V 17, T 16; D 32, H 4, one attention-only block
// with an output bias), counted by hand: params 17·32 + 16·32 + 96·32 +
// 32·32 + 32 + 17·32 = 5728, at 4 + 4 + 8 + 8 bytes each = 137472; training
// forward at B 32 (B·T = 512): block 12·512·32 + 4·32·4·16·16 = 327680,
// embeddings and head 4·512·32 + 4·512·17 = 100352, twice for backward =
// 856064; evaluation forward at 250 rows (B·T = 4000): 12·4000·32 +
// 4·250·4·16·16 = 2560000 plus 4·4000·32 + 4·4000·17 = 784000; activations 4
// bytes each. An MLP adds 8 (B·T, D) and 8 (B·T, F) per block.
func TestEstimateBytes(t *testing.T) {
	cfg := Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true}
	if got, want := cfg.EstimateBytes(32, 250), 137472+4*(856064+2560000+784000.0); got != want {
		t.Errorf("EstimateBytes(32, 250) = %v, want %v", got, want)
	}
	if got, want := cfg.EstimateBytes(32, 0), 137472+4*856064.0; got != want {
		t.Errorf("EstimateBytes(32, 0) = %v, want %v", got, want)
	}
	mlp := cfg
	mlp.MLP, mlp.DFF = true, 64
	var params float64
	for _, s := range mlp.ParamSpecs() {
		n := 1.0
		for _, d := range s.Shape {
			n *= float64(d)
		}
		params += n
	}
	want := params*24 + 4*2*(327680+100352+8*512*32+8*512*64)
	if got := mlp.EstimateBytes(32, 0); got != want {
		t.Errorf("with an MLP: EstimateBytes(32, 0) = %v, want %v", got, want)
	}
}

// TestEvalBatch: the held-out set goes in the fewest chunks of at most
// MaxEvalBatch rows, cut evenly: hand-computed cases, then for every size up
// to 3000 the chunk fits the cap, the chunks cover the set, and fewer than one
// row per chunk is padding.
func TestEvalBatch(t *testing.T) {
	for size, want := range map[int]int{1: 1, 250: 250, 256: 256, 257: 129, 300: 150, 513: 171, 1000: 250} {
		if got := EvalBatch(size); got != want {
			t.Errorf("EvalBatch(%d) = %d, want %d", size, got, want)
		}
	}
	for size := 1; size <= 3000; size++ {
		b := EvalBatch(size)
		chunks := (size + b - 1) / b
		if b > MaxEvalBatch || chunks != (size+MaxEvalBatch-1)/MaxEvalBatch || chunks*b-size >= chunks {
			t.Fatalf("EvalBatch(%d) = %d: %d chunks, %d padded rows", size, b, chunks, chunks*b-size)
		}
	}
}
