package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkTrainStep runs forward + backward of one float32 training step
// (no optimizer) at the sizes of GORGONIA.md's performance table: S is
// B32 T12 D32 H4 V64, M is B64 T64 D128 H8 V64, one attention-only layer
// with fused QKV (no bias) and biased output projection.
func BenchmarkTrainStep(b *testing.B) {
	for _, s := range []struct {
		name           string
		batch, t, d, h int
	}{{"S", 32, 12, 32, 4}, {"M", 64, 64, 128, 8}} {
		b.Run(s.name, func(b *testing.B) {
			cfg := Config{Vocab: 64, Context: s.t, DModel: s.d, Heads: s.h, Layers: 1, OutBias: true}
			m, err := New(cfg, tensor.Float32, 1)
			if err != nil {
				b.Fatal(err)
			}
			g, err := Build(m, BuildOptions{Batch: s.batch, SeqLen: s.t, Train: true})
			if err != nil {
				b.Fatal(err)
			}
			tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 1)), s.batch*s.t, cfg.Vocab)
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
		})
	}
}
