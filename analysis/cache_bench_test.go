package analysis_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
)

// BenchmarkCacheMemory is the memory a cached run of GPT-2 small's shape
// (random float32 weights) keeps over 256 tokens of one sequence, measured
// as the live heap's growth once the run's own memory is collected: for
// the five activations of every layer (resid_pre, attn.weights,
// attn.head_out, resid_post and the logits asked by name), and for what
// the circuit analyses read (analysis.Circuit: the logits kept unnamed).
// It uses the exported API alone, so the same file measures any version:
//
//	go test ./analysis -run '^$' -bench CacheMemory -benchtime 1x
func BenchmarkCacheMemory(b *testing.B) {
	cfg := model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072,
		QKVBias: true, OutBias: true, TieEmbeddings: true}
	m, err := model.New(cfg, tensor.Float32, 1)
	if err != nil {
		b.Fatal(err)
	}
	batch := data.NewBatch(1, 256)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range batch.Tokens {
		batch.Tokens[i] = rng.IntN(cfg.Vocab)
	}
	for _, set := range []struct {
		name  string
		names []string
	}{{"five", append(analysis.Circuit(m), model.LogitsActivation)}, {"circuit", analysis.Circuit(m)}} {
		b.Run(set.name, func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				c, err := analysis.RunWithCache(m, batch, set.names...)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(liveHeap()-before)/1e6, "MB-kept")
				runtime.KeepAlive(c)
			}
		})
	}
}

// liveHeap is the heap's live bytes after a collection.
func liveHeap() int64 {
	var s runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&s)
	return int64(s.HeapAlloc)
}
