package model

import (
	"math"
	"testing"

	"gorgonia.org/tensor"
)

// TestEstimateBytes pins the estimate for train's default model (copy task of
// length 8 over 16 symbols: V 17, T 16; D 32, H 4, one attention-only block
// with an output bias), counted by hand: params 17·32 + 16·32 + 96·32 +
// 32·32 + 32 + 17·32 = 5728, at 4 + 4 + 8 + 8 bytes each = 137472; training
// forward at B 32 (B·T = 512): block 12·512·32 + 4·32·4·16·16 = 327680,
// embeddings and head 4·512·32 + 4·512·17 = 100352, twice for backward =
// 856064; evaluation forward at 250 rows (B·T = 4000): 12·4000·32 +
// 4·250·4·16·16 = 2560000 plus 4·4000·32 + 4·4000·17 = 784000; activations 4
// bytes each. An MLP adds 8 (B·T, D) and 8 (B·T, F) per block (SwiGLU 12
// (B·T, F)), QK-norm two (d) weights and 3 (B·T, D) per block.
func TestEstimateBytes(t *testing.T) {
	cfg := Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true}
	if got, want := cfg.EstimateBytes(32, 250), 137472+4*(856064+2560000+784000.0); got != want {
		t.Errorf("EstimateBytes(32, 250) = %v, want %v", got, want)
	}
	if got, want := cfg.EstimateBytes(32, 0), 137472+4*856064.0; got != want {
		t.Errorf("EstimateBytes(32, 0) = %v, want %v", got, want)
	}
	qk := cfg
	qk.QKNorm = true
	if got, want := qk.EstimateBytes(32, 0), 137472+2*8*24+4*(856064+2*3*512*32.0); got != want {
		t.Errorf("with QK-norm: EstimateBytes(32, 0) = %v, want %v", got, want)
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
	swiglu := mlp
	swiglu.Activation = ActivationSwiGLU // gate, up and down: 3·32·64 weights and 2·64 + 32 biases where fc and proj have 2·32·64 and 64 + 32
	if got, want := swiglu.EstimateBytes(32, 0), want+24*(32*64+64)+4*2*4*512*64; got != want {
		t.Errorf("with SwiGLU: EstimateBytes(32, 0) = %v, want %v", got, want)
	}
}

// TestEvalBatch: the held-out set goes in the fewest chunks of at most
// MaxEvalBatch rows and MaxEvalPositions positions, cut evenly: hand-computed
// cases, then for every size up to 3000 and a short and a long sequence the
// chunk fits both caps, the chunks cover the set, and fewer than one row per
// chunk is padding.
func TestEvalBatch(t *testing.T) {
	cases := []struct{ size, seqLen, want int }{
		{1, 16, 1}, {250, 16, 250}, {256, 16, 256}, {257, 16, 129}, {300, 16, 150}, {513, 16, 171}, {1000, 16, 250},
		{256, 32, 256}, {256, 64, 128}, {300, 64, 100}, {5, 100000, 1},
	}
	for _, c := range cases {
		if got := EvalBatch(c.size, c.seqLen); got != c.want {
			t.Errorf("EvalBatch(%d, %d) = %d, want %d", c.size, c.seqLen, got, c.want)
		}
	}
	for _, seqLen := range []int{16, 64} {
		most := min(MaxEvalBatch, MaxEvalPositions/seqLen)
		for size := 1; size <= 3000; size++ {
			b := EvalBatch(size, seqLen)
			chunks := (size + b - 1) / b
			if b > most || chunks != (size+most-1)/most || chunks*b-size >= chunks {
				t.Fatalf("EvalBatch(%d, %d) = %d: %d chunks, %d padded rows", size, seqLen, b, chunks, chunks*b-size)
			}
		}
	}
}

// TestDecodeBytes pins the decoder's estimate for the model of
// TestEstimateBytes (KVPerToken 2·4·8 = 64), float32, 2 rows of 100
// positions, counted by hand: per row a step's activations 12·32 + 4·32 +
// 4·17 = 580 values, and per position twice (the growing cache's previous
// graph) the cache's 64 on the fused path; 64 + 64 + 2·4 + 4 = 140 on the
// Gorgonia path (the appended copy, scores and weights, the bias); with a
// latent of 6, 6 + 2·6 + 6·32 + 2·4 + 4 = 222. The largest position count
// gives a finite figure, not an overflow.
func TestDecodeBytes(t *testing.T) {
	for _, c := range []struct {
		path        string
		latent      int
		perPosition float64
	}{{"fused", 0, 64}, {"gorgonia", 0, 140}, {"fused", 6, 222}} {
		cfg := Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true, Attention: c.path, KVLatent: c.latent}
		m := mustNew(t, cfg, tensor.Float32, 1)
		if got, want := m.DecodeBytes(2, 100), 4*(cfg.ParamCount()+2*(580+2*100*c.perPosition)); got != want {
			t.Errorf("%+v: DecodeBytes(2, 100) = %v, want %v", c, got, want)
		}
		if got := m.DecodeBytes(1, math.MaxInt); math.IsInf(got, 0) || got < 1e20 {
			t.Errorf("%+v: DecodeBytes(1, MaxInt) = %v, want a finite figure past 1e20", c, got)
		}
	}
	if params := (Config{Vocab: 17, Context: 16, DModel: 32, Heads: 4, Layers: 1, OutBias: true}).ParamCount(); params != 5728 {
		t.Errorf("%v weights, want 5728", params)
	}
}
