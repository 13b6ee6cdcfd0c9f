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

// decodeRow is one decoding measurement: batch rows, a prompt of 8 fed one
// token at a time, greedy to length positions.
type decodeRow struct {
	batch, length int
	cached, none  []float64         // Go's generated tokens/s per repetition, with and without the cache
	torch         map[int][]float64 // PyTorch's, with its KV cache, by thread count
}

// torchBest is the median of PyTorch's best thread count, and that count.
func (r *decodeRow) torchBest() (rate float64, threads int) {
	for th, rates := range r.torch {
		if m := median(rates); m > rate {
			rate, threads = m, th
		}
	}
	return rate, threads
}

// decodePrompt is the prompt length of every decode row.
const decodePrompt = 8

// decodeModel is the sort configuration's model (torch_decode.py's) with a
// learned position table of length rows, float32, random weights.
func decodeModel(length int) (*model.Model, error) {
	cfg := model.Config{Vocab: 17, Context: length, DModel: 64, Heads: 4, Layers: 2, MLP: true, DFF: 256, OutBias: true}
	return model.New(cfg, tensor.Float32, 1)
}

// measureDecode times reps greedy generations of one row's setting on the
// Go side, cached or not, after one untimed one.
func measureDecode(batch, length, reps int, cached bool) ([]float64, error) {
	m, err := decodeModel(length)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	prompts, ns := make([][]int, batch), make([]int, batch)
	for i := range prompts {
		prompts[i], ns[i] = make([]int, decodePrompt), length-decodePrompt
		for k := range prompts[i] {
			prompts[i][k] = rng.IntN(m.Config.Vocab)
		}
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
			rates = append(rates, float64(batch*(length-decodePrompt))/time.Since(start).Seconds())
		}
	}
	return rates, nil
}

// compareDecode runs every decode row on the Go side (with and without the
// cache) and, unless goOnly, on PyTorch's (torch_decode.py, at 1 and 2
// threads, the better compared), alternating, and prints the table.
func compareDecode(opts options, stdout io.Writer) error {
	var rows []*decodeRow
	for _, b := range []int{1, 32} {
		for _, l := range []int{64, 256} {
			rows = append(rows, &decodeRow{batch: b, length: l, torch: map[int][]float64{}})
		}
	}
	script := strings.TrimSuffix(opts.torch, "torch_ref.py") + "torch_decode.py"
	for round := 0; round < opts.rounds; round++ {
		for _, r := range rows {
			for _, cached := range []bool{true, false} {
				rates, err := measureDecode(r.batch, r.length, opts.reps, cached)
				if err != nil {
					return errors.Wrapf(err, "decode B%d to %d", r.batch, r.length)
				}
				if cached {
					r.cached = append(r.cached, rates...)
				} else {
					r.none = append(r.none, rates...)
				}
			}
			if opts.goOnly {
				continue
			}
			for _, threads := range []int{1, 2} {
				out, _, err := runChild(opts.python, []string{script, "--batch", fmt.Sprint(r.batch), "--prompt", fmt.Sprint(decodePrompt),
					"--length", fmt.Sprint(r.length), "--reps", fmt.Sprint(opts.reps), "--threads", fmt.Sprint(threads)}, opts.env)
				if err != nil {
					return err
				}
				var res struct {
					Rates []float64 `json:"tokens_per_s_all"`
				}
				if err := json.Unmarshal(out, &res); err != nil {
					return errors.Wrapf(err, "torch_decode.py printed %q", out)
				}
				r.torch[threads] = append(r.torch[threads], res.Rates...)
			}
		}
	}
	printDecode(stdout, rows, opts)
	return nil
}

// printDecode prints generated tokens/s (medians) and the ratios.
func printDecode(w io.Writer, rows []*decodeRow, opts options) {
	fmt.Fprintf(w, "greedy decoding, sort's model (B rows, D64 H4 L2 d_ff 256 V17, float32), prompt %d fed one token a step; generated tokens/s, median of %d\n",
		decodePrompt, opts.rounds*opts.reps)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "B\tto\tGo cache\tGo no cache\tcache speed-up\tPyTorch cache (threads)\tGo/PyTorch\t")
	for _, r := range rows {
		torch, ratio := "-", "-"
		if best, threads := r.torchBest(); threads > 0 {
			torch = fmt.Sprintf("%.0f (%d)", best, threads)
			ratio = fmt.Sprintf("%.2fx", median(r.cached)/best)
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.1fx\t%s\t%s\t\n", r.batch, r.length, median(r.cached), median(r.none),
			median(r.cached)/median(r.none), torch, ratio)
	}
	tw.Flush()
}
