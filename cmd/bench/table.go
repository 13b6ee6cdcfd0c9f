package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/attnscope/attnscope/internal/msg"
)

// printTable writes one line per config: Go and PyTorch steps/s (medians over
// every repetition), their ratio, the Go side's GFLOP/s and its fraction of
// the machine's sgemm peak, the Go side's allocation per step and both peak
// RSS figures; then notes on anything that makes a figure doubtful.
func printTable(w io.Writer, rows []*row, opts options, peak float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	threads := opts.threads
	var torchCol []string
	for _, t := range threads {
		torchCol = append(torchCol, t.String())
	}
	fmt.Fprintf(tw, "config\tGo steps/s\tPyTorch steps/s best (%s)\tGo/PyTorch\tGo GFLOP/s\tof peak\tGo allocs/step (bytes/step)\tGo peak RSS\tPyTorch peak RSS\n",
		strings.Join(torchCol, " / "))
	var notes []string
	for _, r := range rows {
		goRate := median(r.goRes.rates)
		gflops := goRate * r.size.stepFLOPs() / 1e9
		torchCells, best, torchRSS := "-", 0.0, int64(0)
		if !opts.goOnly && len(r.torch) > 0 {
			var each []string
			for _, t := range threads {
				m := r.torch[t]
				rate := median(m.rates)
				each = append(each, fmt.Sprintf("%.1f", rate))
				best = max(best, rate)
				torchRSS = max(torchRSS, m.peakRSS)
				if want := max(t.torch, t.blas); r.takeTorch && m.cpuWall < 0.85*float64(want) {
					notes = append(notes, fmt.Sprintf("%s PyTorch %v got %.2f CPUs of %d: another load shared the machine, or the threads idled", r.size.Name, t, m.cpuWall, want))
				}
			}
			torchCells = fmt.Sprintf("%.1f (%s)", best, strings.Join(each, " / "))
		}
		ratio, ofPeak := "-", "-"
		if best > 0 {
			ratio = fmt.Sprintf("%.2fx", goRate/best)
		}
		if peak > 0 {
			ofPeak = fmt.Sprintf("%.1f%%", 100*gflops/peak)
		}
		torchRSSCell := "-"
		if torchRSS > 0 {
			torchRSSCell = msg.Bytes(float64(torchRSS))
		}
		fmt.Fprintf(tw, "%s %s\t%.1f\t%s\t%s\t%.1f\t%s\t%.0f (%s)\t%s\t%s\n", r.size.Name, r.path, goRate, torchCells, ratio,
			gflops, ofPeak, r.goRes.allocs, msg.Bytes(r.goRes.bytes), msg.Bytes(float64(r.goRes.peakRSS)), torchRSSCell)
		notes = append(notes, fmt.Sprintf("%s %s: %s, %.1f MFLOP/step; final loss Go %.4f; Go used %.2f CPUs per wall second",
			r.size.Name, r.path, r.size.describe(), r.size.stepFLOPs()/1e6, r.goRes.loss, r.goRes.cpuWall))
		if r.size.NanoGPT {
			notes = append(notes, fineTuneNote(r, best, torchRSS))
		}
		for _, base := range rows {
			if r.size.Base != "" && base.size.Name == r.size.Base && base.path == r.path {
				notes = append(notes, fmt.Sprintf("%s %s: %.2fx the time per step of %s %s", r.size.Name, r.path, median(base.goRes.rates)/goRate, base.size.Name, base.path))
			}
		}
	}
	_ = tw.Flush() // the writer's own errors surface on w's next write
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// fineTuneNote is a NanoGPT size's line: tokens/s on both sides (a step is
// Batch·SeqLen tokens), the ratio of the peaks, and the Go side's memory
// estimate (model.Config.TrainMemory, without an evaluation graph, as the
// bench runs none) against its measured peak.
func fineTuneNote(r *row, torchRate float64, torchRSS int64) string {
	tokens := float64(r.size.Batch * r.size.SeqLen)
	est := r.size.modelConfig(r.path).TrainMemory(r.size.Batch, 0, int(r.size.moments().Size()))
	goRSS := float64(r.goRes.peakRSS)
	note := fmt.Sprintf("%s %s: tokens/s Go %.1f", r.size.Name, r.path, tokens*median(r.goRes.rates))
	if torchRate > 0 && torchRSS > 0 {
		note += fmt.Sprintf(", PyTorch %.1f; peak RSS %.2fx PyTorch's", tokens*torchRate, goRSS/float64(torchRSS))
	}
	if goRSS > 0 {
		note += fmt.Sprintf("; estimate %s, %+.0f%% of Go's peak", est, 100*(est.Total()/goRSS-1))
	}
	return note
}
