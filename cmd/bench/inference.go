package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/model"
)

// inferenceExtras are what a decode setting with maps measures besides
// decoding: the machine's read bandwidth (bytes/s, per round) and a forward
// over tokens positions of one sequence that keeps every layer's attention
// weights (forwards/s): Go's analysis.RunWithCache as inspect runs it, Go's
// graph built once and run again, and PyTorch's by thread count.
type inferenceExtras struct {
	tokens        int
	bandwidth     []float64
	whole, reruns []float64
	torch         map[int][]float64
}

// run measures one round of everything.
func (e *inferenceExtras) run(m *model.Model, s decodeSetting, opts options, script string) error {
	e.bandwidth = append(e.bandwidth, readBandwidth())
	whole, reruns, err := measureMaps(m, e.tokens, opts.reps)
	if err != nil {
		return errors.Wrapf(err, "forward over %d tokens with maps", e.tokens)
	}
	e.whole, e.reruns = append(e.whole, whole...), append(e.reruns, reruns...)
	if opts.goOnly {
		return nil
	}
	for _, threads := range decodeThreads {
		rates, err := runTorchDecode(opts, script, "forwards_per_s_all", threads, "--config", s.name, "--maps", fmt.Sprint(e.tokens))
		if err != nil {
			return err
		}
		e.torch[threads] = append(e.torch[threads], rates...)
	}
	return nil
}

// bandwidthBytes is the buffer readBandwidth reads, larger than the caches.
const bandwidthBytes = 1 << 30

// bandwidthSink keeps readBandwidth's sums alive.
var bandwidthSink float32

// readBandwidth is the machine's read bandwidth in bytes/s: a 1 GiB
// float32 buffer summed (kernels.Sum, a vector pass bound by memory) in
// GOMAXPROCS parts side by side, the best of 5 passes. The buffer is in
// huge pages, as a decoder's weights are (kernels.HugePages): in 4 KiB
// pages it read slower than llama2.c's run.c decodes.
func readBandwidth() float64 {
	buf := make([]float32, bandwidthBytes/4)
	for i := range buf { // every page touched before the timing
		buf[i] = 1
	}
	kernels.HugePages(buf)
	workers := runtime.GOMAXPROCS(0)
	part := len(buf) / workers
	sums := make([]float32, workers)
	best := 0.0
	for range 5 {
		start := time.Now()
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { sums[w] = kernels.Sum(buf[w*part : (w+1)*part]) })
		}
		wg.Wait()
		best = max(best, float64(workers*part*4)/time.Since(start).Seconds())
	}
	bandwidthSink = sums[0]
	return best
}

// stepWeightBytes is what one decoding step reads of m's weights: every
// parameter once, in the dtype it is held in (a mapped matrix in its
// file's), except the embedding tables, of which it reads a row (the
// token table whole when it is also the LM head).
func stepWeightBytes(m *model.Model) float64 {
	cfg := m.Config
	n := 0.0
	for _, p := range m.Params {
		size, bytes := float64(p.Len()), float64(m.Dtype.Size())
		if p.Stored != nil {
			bytes = float64(p.Stored.Bytes()) / size
		}
		if p.Name == "pos_emb.weight" || p.Name == "tok_emb.weight" && !cfg.TieEmbeddings {
			size = float64(cfg.DModel)
		}
		n += size * bytes
	}
	return n
}

// measureMaps times reps forwards of m over t random tokens of one
// sequence keeping every layer's attention weights, after one untimed
// one: analysis.RunWithCache (a graph built, run once and its maps read
// out in the model's dtype at every call, what inspect does) and the run alone of one graph built
// with the weights cached, on its lean machine. forwards/s. No position
// is scored: the loss, which PyTorch's side does not compute, costs
// nothing.
func measureMaps(m *model.Model, t, reps int) (whole, reruns []float64, err error) {
	rng := rand.New(rand.NewPCG(3, 4))
	b := data.NewBatch(1, t)
	for i := range b.Tokens {
		b.Tokens[i], b.Targets[i] = rng.IntN(m.Config.Vocab), rng.IntN(m.Config.Vocab)
	}
	names := analysis.Weights(m)
	whole, err = timeRuns(reps, func() error {
		_, err := analysis.RunWithCache(m, b, names...)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: t, Cache: names})
	if err != nil {
		return nil, nil, err
	}
	if err := g.Feed(b.Tokens, b.Targets, b.Mask); err != nil {
		return nil, nil, err
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	reruns, err = timeRuns(reps, vm.RunAll)
	return whole, reruns, err
}

// timeRuns is the rate (runs/s) of each of reps calls of run, after one
// untimed call.
func timeRuns(reps int, run func() error) ([]float64, error) {
	var rates []float64
	for rep := -1; rep < reps; rep++ {
		start := time.Now()
		if err := run(); err != nil {
			return nil, err
		}
		if rep >= 0 {
			rates = append(rates, 1/time.Since(start).Seconds())
		}
	}
	return rates, nil
}

// printBandwidth prints the bandwidth (the best round) and the decoding
// limit it sets for m at batch 1, and returns that limit in tokens/s.
func (e *inferenceExtras) printBandwidth(w io.Writer, m *model.Model) float64 {
	bw, bytes := 0.0, stepWeightBytes(m)
	for _, b := range e.bandwidth {
		bw = max(bw, b)
	}
	limit := bw / bytes
	fmt.Fprintf(w, "read bandwidth %.1f GB/s (1 GiB of float32 in huge pages summed on %d goroutines, best of 5 passes, best round); a decoding step reads %.1f MB of weights: at most %.1f tokens/s at batch 1\n",
		bw/1e9, runtime.GOMAXPROCS(0), bytes/1e6, limit)
	return limit
}

// printMaps prints the forward with maps: Go's two figures against
// PyTorch's better thread count.
func (e *inferenceExtras) printMaps(w io.Writer, opts options) {
	fmt.Fprintf(w, "forward over %d tokens of one sequence keeping every attention map, forwards/s, median of %d\n", e.tokens, opts.rounds*opts.reps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "Go\t\tPyTorch (threads)\tGo/PyTorch\t")
	best, threads := torchBest(e.torch)
	for _, r := range []struct {
		name  string
		rates []float64
	}{{"analysis.RunWithCache (graph built, run once, maps kept in the model's dtype)", e.whole}, {"one graph run again (model.Build, lean machine)", e.reruns}} {
		torch, ratio := "-", "-"
		if threads > 0 {
			torch, ratio = fmt.Sprintf("%.2f (%d)", best, threads), fmt.Sprintf("%.2fx", median(r.rates)/best)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t\n", r.name, median(r.rates), torch, ratio)
	}
	_ = tw.Flush()
}
