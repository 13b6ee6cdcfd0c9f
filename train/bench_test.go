package train

import (
	"fmt"
	"testing"

	"github.com/attnscope/attnscope/data"
)

// BenchmarkStep times one training step (batch, forward, backward, clip,
// Adam) at the two sizes of shared/GORGONIA.md's reference table: S is the
// lesson's repeat setting, M a wider and longer one.
func BenchmarkStep(b *testing.B) {
	for _, size := range []struct {
		name               string
		b, t, d, h, layers int
	}{
		{"S_B32_T12_D32_H4", 32, 12, 32, 4, 1},
		{"M_B64_T64_D128_H8", 64, 64, 128, 8, 1},
	} {
		b.Run(size.name, func(b *testing.B) {
			yml := fmt.Sprintf("task: {name: repeat, length: %d, symbols: 64}\nmodel: {d_model: %d, heads: %d, layers: %d}\n"+
				"train: {batch_size: %d, steps: 1000000, eval_every: 0, checkpoint_every: 0}\n", size.t, size.d, size.h, size.layers, size.b)
			cfg, err := ParseConfig("bench.yaml", []byte(yml), nil)
			if err != nil {
				b.Fatal(err)
			}
			r, err := prepare(cfg, Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer r.close()
			batch := data.NewBatch(size.b, size.t)
			b.ResetTimer()
			for i := range b.N {
				if err := data.Fill(r.task, batch, data.StepRNG(cfg.Seed, i+1)); err != nil {
					b.Fatal(err)
				}
				if err := r.graph.Feed(batch.Tokens, batch.Targets, batch.Mask); err != nil {
					b.Fatal(err)
				}
				if _, _, err := r.step(i + 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
		})
	}
}
