package analysis_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
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
// attn.head_out, resid_post and the logits asked by name), and for the
// first four alone (the logits kept unnamed, as Cache.Logits).
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
	var four []string // what the circuit analyses read before mlp_out was named
	for l := range cfg.Layers {
		four = append(four, model.ResidPre(l), model.AttnWeights(l), model.HeadOut(l), model.ResidPost(l))
	}
	for _, set := range []struct {
		name  string
		names []string
	}{{"five", append(slices.Clone(four), model.LogitsActivation)}, {"four", four}} {
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
