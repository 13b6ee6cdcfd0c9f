package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
)

// modelSeed draws a -model-dir's weights: the same directory every time.
const modelSeed = 47

// mappedResult is what runMapped measures. The machine's read bandwidth
// moves from minute to minute when it is shared, so each round probes it
// just before and just after its decoding and holds the decoding to the
// better of the two.
type mappedResult struct {
	decode    [][]float64 // generated tokens/s, per round
	bandwidth []float64   // the probe's bytes/s, per round
	forward   []float64   // forwards/s over the setting's maps tokens
	gemm      []float64   // the float32 GEMM's FLOP/s at the forward's shape
}

// runMapped is -decode on a setting of a Hugging Face directory (s.hf):
// it writes the directory into dir or reuses it (prepareModelDir), opens
// it as inspect does (weights mapped in place), and measures decoding at
// batch 1 with the cache against the read bandwidth of the same mapped
// weights, and a forward over s.maps tokens against the float32 GEMM.
func runMapped(opts options, s decodeSetting, dir string, stdout, stderr io.Writer) error {
	if err := prepareModelDir(dir, *s.hf, modelSeed, []string{opts.torch}, stderr); err != nil {
		return err
	}
	start := time.Now()
	opened, err := open.Open(dir, open.Options{Map: true, NoText: true})
	if err != nil {
		return err
	}
	m := opened.Model
	fmt.Fprintf(stderr, "opened %s in %.2f s\n", dir, time.Since(start).Seconds())
	var r mappedResult
	load0 := loadAvg()
	for round := 1; round <= opts.rounds; round++ {
		fmt.Fprintf(stderr, "round %d/%d: decode, read probe, forward over %d tokens, GEMM\n", round, opts.rounds, s.maps)
		if err := r.measure(m, s, opts.reps); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "load average %.2f before, %.2f after\n", load0, loadAvg())
	r.print(stdout, m, s, opts)
	return nil
}

// measure runs one round of every measurement.
func (r *mappedResult) measure(m *model.Model, s decodeSetting, reps int) error {
	weights := stepWeights(m)
	before := probeMapped(weights)
	rates, err := measureDecode(m, 1, s.prompt, s.lengths[0], reps, true)
	if err != nil {
		return errors.Wrap(err, "decode")
	}
	r.decode = append(r.decode, rates)
	r.bandwidth = append(r.bandwidth, max(before, probeMapped(weights)))
	forward, err := measureForward(m, s.maps, reps)
	if err != nil {
		return errors.Wrapf(err, "forward over %d tokens", s.maps)
	}
	r.forward = append(r.forward, forward...)
	r.gemm = append(r.gemm, gemmRate(s.maps, m.Config.DFF, m.Config.DModel))
	return nil
}

// print prints the figures: each round's decoding against its bandwidth
// limit and their medians, then the forward against the GEMM.
func (r *mappedResult) print(w io.Writer, m *model.Model, s decodeSetting, opts options) {
	bytes := stepWeightBytes(m)
	mapped, own := m.WeightBytes()
	fmt.Fprintf(w, "%s: %.2f GB mapped, %.2f GB read into memory\n", s.describe, mapped/1e9, own/1e9)
	fmt.Fprintf(w, "a decoding step reads %.2f GB of weights; the read probe sums the same mapped bytes on %d goroutines with software prefetch (best of 3 passes, before and after the round's decoding)\n",
		bytes/1e9, runtime.GOMAXPROCS(0))
	fmt.Fprintf(w, "greedy decoding at batch 1 with the KV cache, prompt %d fed one token a step, to %d positions (tokens/s, median of %d per round):\n", s.prompt, s.lengths[0], opts.reps)
	var limits, decodes, ratios []float64
	for i, rates := range r.decode {
		limit, decode := r.bandwidth[i]/bytes, median(rates)
		limits, decodes, ratios = append(limits, limit), append(decodes, decode), append(ratios, decode/limit)
		fmt.Fprintf(w, "  round %d: probe %.1f GB/s, limit %.2f tokens/s; decoding %.2f tokens/s, %.2f of the limit\n", i+1, r.bandwidth[i]/1e9, limit, decode, decode/limit)
	}
	fmt.Fprintf(w, "decoding %.2f tokens/s against a limit of %.2f: %.2f of it (medians over %s)\n", median(decodes), median(limits), median(ratios), msg.Count(len(ratios), "round"))
	flops := forwardFLOPs(m.Config, s.maps)
	forward, gemm := median(r.forward)*flops, 0.0
	for _, g := range r.gemm {
		gemm = max(gemm, g)
	}
	fmt.Fprintf(w, "forward over %d tokens (model.Build, fused path, lean machine; %.2f TFLOP of matrix products): %.1f s (median of %d), %.1f GFLOP/s; the float32 GEMM (kernels.Gemm, %d x %d x %d, best): %.1f GFLOP/s; ratio %.2f\n",
		s.maps, flops/1e12, 1/median(r.forward), len(r.forward), forward/1e9, s.maps, m.Config.DFF, m.Config.DModel, gemm/1e9, forward/gemm)
}

// stepWeights are the bytes of the weights one decoding step reads whole:
// every stored matrix's mapped parts and every tensor's values, except
// the token table, of which it reads a row (the whole table when it is
// also the head).
func stepWeights(m *model.Model) [][]byte {
	var out [][]byte
	for _, p := range m.Params {
		if p.Name == "pos_emb.weight" || p.Name == "tok_emb.weight" && !m.Config.TieEmbeddings {
			continue
		}
		if p.Stored != nil {
			for _, part := range p.Stored.Parts {
				out = append(out, part.Data)
			}
			continue
		}
		if v, ok := p.Value.Data().([]float32); ok && len(v) > 0 {
			out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)))
		}
	}
	return out
}

// probeBlock is the bytes the probe sums at a time, the next block asked
// for before (kernels.PrefetchRows), as the 16-bit GEMV asks for its rows
// ahead.
const probeBlock = 4096

// probeMapped is the read bandwidth over weights (bytes/s): each core
// sums its share of every weight, all in one pass without a join, each
// block's successor prefetched; the best of 3 passes.
func probeMapped(weights [][]byte) float64 {
	workers := runtime.GOMAXPROCS(0)
	total := 0
	for _, w := range weights {
		total += len(w)
	}
	sums := make([]float32, workers)
	best := 0.0
	for range 3 {
		start := time.Now()
		var wg sync.WaitGroup
		for k := range workers {
			wg.Go(func() {
				for _, w := range weights {
					lo, hi := share(len(w)/4, k, workers)
					sums[k] += sumPrefetched(w[4*lo : 4*hi])
				}
			})
		}
		wg.Wait()
		best = max(best, float64(total)/time.Since(start).Seconds())
	}
	bandwidthSink = sums[0]
	return best
}

// share is part k of n of length items, in contiguous pieces.
func share(length, k, n int) (lo, hi int) { return length * k / n, length * (k + 1) / n }

// sumPrefetched sums b (its bytes as float32 values: the sum is only kept
// alive, what counts is that every byte is read) a block at a time.
func sumPrefetched(b []byte) float32 {
	if len(b) < 4 {
		return 0
	}
	x := unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
	const block = probeBlock / 4
	var s float32
	for lo := 0; lo < len(x); lo += block {
		hi := min(lo+block, len(x))
		kernels.PrefetchRows(x, 1, 0, hi, min(hi+block, len(x)))
		s += kernels.Sum(x[lo:hi])
	}
	return s
}

// measureForward times reps forwards of m over t random tokens of one
// sequence (the fused path's graph built once, run on its lean machine),
// after one untimed one: forwards/s.
func measureForward(m *model.Model, t, reps int) ([]float64, error) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := data.NewBatch(1, t)
	for i := range b.Tokens {
		b.Tokens[i], b.Targets[i] = rng.IntN(m.Config.Vocab), rng.IntN(m.Config.Vocab)
	}
	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: t})
	if err != nil {
		return nil, err
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return nil, err
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	return timeRuns(reps, vm.RunAll)
}

// forwardFLOPs are the multiply-adds x 2 of the matrix products of a
// Llama's forward over t tokens: every Linear (q, k, v, o, SwiGLU's three,
// the head) and each head's scores and weighted values over all t x t
// pairs.
func forwardFLOPs(c model.Config, t int) float64 {
	kv := c.DModel / c.Heads * c.KVHeadCount()
	perLayer := float64(c.DModel)*float64(2*c.DModel+2*kv) + 3*float64(c.DModel)*float64(c.DFF)
	attention := 2 * float64(t) * float64(t) * float64(c.DModel)
	return 2*float64(t)*(float64(c.Layers)*perLayer+float64(c.Vocab)*float64(c.DModel)) + float64(c.Layers)*2*attention
}

// gemmRate is the project's float32 GEMM's rate (FLOP/s) on a Linear's
// product at the forward's shape: m positions against an (n, k) weight
// stored as Linear stores it, the best of 3.
func gemmRate(m, n, k int) float64 {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b, c := make([]float32, m*k), make([]float32, n*k), make([]float32, m*n)
	for i := range a {
		a[i] = rng.Float32() - 0.5
	}
	for i := range b {
		b[i] = rng.Float32() - 0.5
	}
	best := 0.0
	for range 3 {
		start := time.Now()
		kernels.Gemm(false, true, m, n, k, a, k, b, k, 0, c, n)
		best = max(best, 2*float64(m)*float64(n)*float64(k)/time.Since(start).Seconds())
	}
	return best
}
