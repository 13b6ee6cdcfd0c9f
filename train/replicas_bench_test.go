package train

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
)

// BenchmarkReplicasStep times forward, backward and the gradient
// combination of one float32 training step as train.Run takes it (no
// optimizer) at cmd/bench's sizes, on each attention path: S and M one
// attention-only layer, sort and L4 full pre-LN blocks. It is the
// benchmark to profile a path with (-cpuprofile, -memprofile); cmd/bench
// gives the figures against PyTorch.
func BenchmarkReplicasStep(b *testing.B) {
	for _, s := range []struct {
		name                     string
		batch, t, d, h, l, ff, v int
	}{
		{"S", 32, 12, 32, 4, 1, 0, 64},
		{"M", 64, 64, 128, 8, 1, 0, 64},
		{"sort", 32, 16, 64, 4, 2, 256, 17},
		{"L4", 16, 64, 128, 8, 4, 512, 64},
	} {
		for _, path := range layers.Paths {
			b.Run(s.name+"/"+string(path), func(b *testing.B) {
				cfg := model.Config{Vocab: s.v, Context: s.t, DModel: s.d, Heads: s.h, Layers: s.l, MLP: s.ff > 0, DFF: s.ff, OutBias: true, Attention: string(path)}
				m, err := model.New(cfg, tensor.Float32, 1)
				if err != nil {
					b.Fatal(err)
				}
				r, err := BuildReplicas(m, s.batch, s.t)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				tokens, targets, mask := randomBatch(rand.New(rand.NewPCG(1, 1)), s.batch*s.t, cfg.Vocab)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := r.Feed(tokens, targets, mask); err != nil {
						b.Fatal(err)
					}
					if err := r.RunAll(); err != nil {
						b.Fatal(err)
					}
					if _, err := r.Gradients(); err != nil {
						b.Fatal(err)
					}
					r.Reset()
				}
			})
		}
	}
}
