package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/model"
)

// decodeSetting is one -decode-config: the model bench -decode times, the
// rows it times it on, and what else it measures. torch_decode.py's
// CONFIGS holds the same model under the same name.
type decodeSetting struct {
	name, describe   string
	prompt           int // tokens fed one a step before the first generated one
	batches, lengths []int
	// noCache also times Go without the cache (a full forward of the
	// prefix at every step).
	noCache bool
	// maps > 0 also measures the read bandwidth's limit on decoding and
	// times a forward over maps tokens that keeps every attention map.
	maps int
	// llama2c also times llama2.c's run.c on the model (-llama2c).
	llama2c bool
	// config is the model for rows of length positions.
	config func(length int) model.Config
	// hf, when set, is the model instead: a Hugging Face directory of
	// random BF16 weights written into -model-dir, opened mapped, decoded
	// at batch 1 to lengths[0] and run forward over maps tokens
	// (runMapped); config is unused.
	hf *llamaShape
}

// gpt2Small is GPT-2 small's shape: the speed targets are measured
// on it, with random weights.
var gpt2Small = model.Config{Vocab: 50257, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 3072,
	QKVBias: true, OutBias: true, TieEmbeddings: true}

// stories110M is the shape of llama2.c's stories110M (its README's table:
// dim 768, 12 layers, 12 heads and kv heads, 1024 positions; model.py's
// hidden dim, 2/3 of 4 x 768 rounded up to a multiple of 32, 2048; the
// Llama 2 vocabulary of 32000; RMSNorm at run.c's eps 1e-5, SwiGLU, rotary
// positions at base 10000, no biases; the head tied to the token embedding,
// as model.py ties it and export.py writes it), with random weights.
var stories110M = model.Config{Vocab: 32000, Context: 1024, DModel: 768, Heads: 12, Layers: 12, MLP: true, DFF: 2048,
	Norm: model.NormRMS, NormEps: 1e-5, Activation: model.ActivationSwiGLU, MLPBias: model.FlagOff,
	Position: model.PositionRope, RopeBase: 10000, TieEmbeddings: true}

var decodeSettings = []decodeSetting{
	{name: "sort", describe: "sort's model (B rows, D64 H4 L2 d_ff 256 V17, float32)", prompt: 8,
		batches: []int{1, 32}, lengths: []int{64, 256}, noCache: true,
		// configs/sort.yaml's model with a position table of the row's length
		config: func(length int) model.Config {
			return model.Config{Vocab: 17, Context: length, DModel: 64, Heads: 4, Layers: 2, MLP: true, DFF: 256, OutBias: true}
		}},
	{name: "gpt2", describe: "GPT-2 small's shape (D768 H12 L12 d_ff 3072 V50257, biases, tied head, random weights, float32)", prompt: 1,
		batches: []int{1}, lengths: []int{64}, maps: 256,
		config: func(int) model.Config { return gpt2Small }},
	{name: "llama", describe: "a Llama of stories110M's shape (D768 H12 L12 hidden 2048 V32000, RMSNorm, SwiGLU, rope, no biases, tied head, random weights, float32)", prompt: 1,
		batches: []int{1}, lengths: []int{64}, maps: 256, llama2c: true,
		config: func(int) model.Config { return stories110M }},
	{name: "llama3-8b", describe: "Llama 3.1 8B's shape (D4096 H32 KV8 L32 hidden 14336 V128256, untied, random BF16 weights mapped)", prompt: 1,
		lengths: []int{16}, maps: 256, hf: &llama3_8B},
}

// decodeSettingNamed is the -decode-config called name.
func decodeSettingNamed(name string) (decodeSetting, error) {
	var names []string
	for _, s := range decodeSettings {
		if s.name == name {
			return s, nil
		}
		names = append(names, s.name)
	}
	return decodeSetting{}, errors.Errorf("-decode-config %q: want one of %s", name, strings.Join(names, ", "))
}

// decodeRow is one decoding measurement: batch rows, the setting's prompt
// fed one token at a time, greedy to length positions.
type decodeRow struct {
	batch, length int
	cached, none  []float64         // Go's generated tokens/s per repetition, with and without the cache
	torch         map[int][]float64 // PyTorch's, with its KV cache, by thread count
	runc          []float64         // llama2.c's run.c's, on runcThreads threads
	runcThreads   int
}

// torchBest is the median of PyTorch's best thread count, and that count.
func torchBest(byThreads map[int][]float64) (rate float64, threads int) {
	for th, rates := range byThreads {
		if m := median(rates); m > rate {
			rate, threads = m, th
		}
	}
	return rate, threads
}

// newDecodeModels makes the setting's model for each length once, float32
// with random weights; lengths that give one config share a model.
func newDecodeModels(s decodeSetting) (map[int]*model.Model, error) {
	models := map[int]*model.Model{}
	byConfig := map[model.Config]*model.Model{}
	for _, length := range s.lengths {
		cfg := s.config(length)
		if byConfig[cfg] == nil {
			m, err := model.New(cfg, tensor.Float32, 1)
			if err != nil {
				return nil, err
			}
			byConfig[cfg] = m
		}
		models[length] = byConfig[cfg]
	}
	return models, nil
}

// measureDecode times reps greedy generations of batch rows of m from
// random prompts of prompt tokens to length positions, cached or not,
// after one untimed one: generated tokens/s.
func measureDecode(m *model.Model, batch, prompt, length, reps int, cached bool) ([]float64, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	prompts, ns := make([][]int, batch), make([]int, batch)
	for i := range prompts {
		prompts[i], ns[i] = make([]int, prompt), length-prompt
		for k := range prompts[i] {
			prompts[i][k] = rng.IntN(m.Config.Vocab)
		}
	}
	if cached {
		// The steady state: the bench decodes many times on these weights
		// (a decoder as long as model.HugePagesFrom moves them itself).
		model.WeightsInHugePages(m)
	}
	st, err := generate.New(m, batch, length, cached)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	s, err := generate.NewSampler(generate.Greedy)
	if err != nil {
		return nil, err
	}
	var rates []float64
	for rep := -1; rep < reps; rep++ {
		start := time.Now()
		if _, err := generate.Generate(st, prompts, ns, s, m.Config.Vocab); err != nil {
			return nil, err
		}
		if rep >= 0 {
			rates = append(rates, float64(batch*(length-prompt))/time.Since(start).Seconds())
		}
	}
	return rates, nil
}

// decodeThreads are the PyTorch thread counts every decode measurement
// runs at; the better is compared.
var decodeThreads = []int{1, 2}

// runTorchDecode runs torch_decode.py with args and the thread count and
// returns the rates it printed under key.
func runTorchDecode(opts options, script, key string, threads int, args ...string) ([]float64, error) {
	args = append([]string{script, "--reps", fmt.Sprint(opts.reps), "--threads", fmt.Sprint(threads)}, args...)
	out, _, err := runChild(opts.python, args, opts.env)
	if err != nil {
		return nil, err
	}
	var res map[string]json.RawMessage
	var rates []float64
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, errors.Wrapf(err, "torch_decode.py printed %q", out)
	}
	if err := json.Unmarshal(res[key], &rates); err != nil || len(rates) == 0 {
		return nil, errors.Errorf("torch_decode.py printed no %s: %q", key, out)
	}
	return rates, nil
}

// compareDecode runs every row of the setting on the Go side (with the
// cache, and without it when the setting asks) and, unless goOnly, on
// PyTorch's (torch_decode.py, at 1 and 2 threads, the better compared),
// alternating, then the setting's forward with maps and bandwidth limit,
// and prints the tables.
func compareDecode(opts options, s decodeSetting, stdout, stderr io.Writer) error {
	var rows []*decodeRow
	for _, b := range s.batches {
		for _, l := range s.lengths {
			rows = append(rows, &decodeRow{batch: b, length: l, torch: map[int][]float64{}})
		}
	}
	models, err := newDecodeModels(s)
	if err != nil {
		return err
	}
	script := strings.TrimSuffix(opts.torch, "torch_ref.py") + "torch_decode.py"
	var extra *inferenceExtras
	if s.maps > 0 {
		extra = &inferenceExtras{tokens: s.maps, torch: map[int][]float64{}}
	}
	runc, agreement, err := prepareLlama2c(opts, s, models[s.lengths[0]], stderr)
	if err != nil {
		return err
	}
	if runc != nil {
		defer runc.Close()
	}
	load0 := loadAvg()
	for round := 1; round <= opts.rounds; round++ {
		for _, r := range rows {
			fmt.Fprintf(stderr, "round %d/%d, B%d to %d: Go", round, opts.rounds, r.batch, r.length)
			if err := r.runGo(models[r.length], s, opts); err != nil {
				return err
			}
			if runc != nil {
				fmt.Fprintf(stderr, ", run.c")
				if err := r.runLlama2c(runc, opts.reps); err != nil {
					return err
				}
			}
			if !opts.goOnly {
				for _, threads := range decodeThreads {
					fmt.Fprintf(stderr, ", PyTorch %dt", threads)
					rates, err := runTorchDecode(opts, script, "tokens_per_s_all", threads, "--config", s.name, "--batch", fmt.Sprint(r.batch),
						"--prompt", fmt.Sprint(s.prompt), "--length", fmt.Sprint(r.length))
					if err != nil {
						return err
					}
					r.torch[threads] = append(r.torch[threads], rates...)
				}
			}
			fmt.Fprintln(stderr)
		}
		if extra != nil {
			fmt.Fprintf(stderr, "round %d/%d: read bandwidth, forward over %d tokens with maps\n", round, opts.rounds, s.maps)
			if err := extra.run(models[s.lengths[0]], s, opts, script); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stdout, "load average %.2f before, %.2f after\n", load0, loadAvg())
	var limit float64
	if extra != nil {
		limit = extra.printBandwidth(stdout, models[s.lengths[0]])
	}
	printDecode(stdout, rows, s, opts, limit)
	if agreement != "" {
		fmt.Fprintln(stdout, agreement)
	}
	if extra != nil {
		extra.printMaps(stdout, opts)
	}
	return nil
}

// runGo times the row on the Go side, with the cache and, when the
// setting asks, without it.
func (r *decodeRow) runGo(m *model.Model, s decodeSetting, opts options) error {
	for _, cached := range []bool{true, false} {
		if !cached && !s.noCache {
			continue
		}
		rates, err := measureDecode(m, r.batch, s.prompt, r.length, opts.reps, cached)
		if err != nil {
			return errors.Wrapf(err, "decode B%d to %d", r.batch, r.length)
		}
		if cached {
			r.cached = append(r.cached, rates...)
		} else {
			r.none = append(r.none, rates...)
		}
	}
	return nil
}

// printDecode prints generated tokens/s (medians) and the ratios; with a
// bandwidth limit (tokens/s, > 0) also the limit and Go's share of it.
func printDecode(w io.Writer, rows []*decodeRow, s decodeSetting, opts options, limit float64) {
	fmt.Fprintf(w, "greedy decoding, %s, prompt %d fed one token a step; generated tokens/s, median of %d\n",
		s.describe, s.prompt, opts.rounds*opts.reps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "B\tto\tGo cache\t"
	if s.noCache {
		head += "Go no cache\tcache speed-up\t"
	}
	head += "PyTorch cache (threads)\tGo/PyTorch\t"
	if s.llama2c {
		head += "run.c (threads)\tGo/run.c\t"
	}
	if limit > 0 {
		head += "bandwidth limit\tGo/limit\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		torch, ratio := "-", "-"
		if best, threads := torchBest(r.torch); threads > 0 {
			torch = fmt.Sprintf("%s (%d)", formatRate(best), threads)
			ratio = fmt.Sprintf("%.2fx", median(r.cached)/best)
		}
		line := fmt.Sprintf("%d\t%d\t%s\t", r.batch, r.length, formatRate(median(r.cached)))
		if s.noCache {
			line += fmt.Sprintf("%s\t%.1fx\t", formatRate(median(r.none)), median(r.cached)/median(r.none))
		}
		line += torch + "\t" + ratio + "\t"
		if s.llama2c {
			line += r.llama2cColumns()
		}
		if limit > 0 {
			line += fmt.Sprintf("%.1f\t%.2f\t", limit, median(r.cached)/limit)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush() // the writer's own errors surface on w's next write
}

// llama2cColumns are run.c's median and Go's ratio to it, or dashes.
func (r *decodeRow) llama2cColumns() string {
	if len(r.runc) == 0 {
		return "-\t-\t"
	}
	return fmt.Sprintf("%s (%d)\t%.2fx\t", formatRate(median(r.runc)), r.runcThreads, median(r.cached)/median(r.runc))
}

// formatRate prints a rate with one decimal below 100 (GPT-2's tokens/s),
// none above.
func formatRate(x float64) string {
	if x < 100 {
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}
