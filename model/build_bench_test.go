package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attnscope/attnscope/layers"
	"gorgonia.org/tensor"
)

// BenchmarkTrainStep runs forward + backward of one float32 training step
// (no optimizer) at the sizes of docs/gorgonia.md's performance table: S is
// B32 T12 D32 H4 V64, M is B64 T64 D128 H8 V64, one attention-only layer
// with fused QKV (no bias) and biased output projection; on each attention
// path.
func BenchmarkTrainStep(b *testing.B) {
	for _, s := range []struct {
		name           string
		batch, t, d, h int
	}{{"S", 32, 12, 32, 4}, {"M", 64, 64, 128, 8}} {
		for _, path := range layers.Paths {
			b.Run(s.name+"/"+string(path), func(b *testing.B) { benchTrainStep(b, s.batch, s.t, s.d, s.h, path) })
		}
	}
}

// benchTrainStep times one training step of the size on path.
func benchTrainStep(b *testing.B, batch, t, d, h int, path layers.Path) {
	cfg := Config{Vocab: 64, Context: t, DModel: d, Heads: h, Layers: 1, OutBias: true, Attention: string(path)}
	m, err := New(cfg, tensor.Float32, 1)
	if err != nil {
		b.Fatal(err)
	}
	g, err := Build(m, BuildOptions{Batch: batch, SeqLen: t, Train: true})
	if err != nil {
		b.Fatal(err)
	}
	tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 1)), batch*t, cfg.Vocab)
	if err := g.Feed(tokens, targets, mask); err != nil {
		b.Fatal(err)
	}
	vm := g.NewMachine()
	defer vm.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		vm.Reset()
		if err := vm.RunAll(); err != nil {
			b.Fatal(fmt.Sprint(err))
		}
	}
}
