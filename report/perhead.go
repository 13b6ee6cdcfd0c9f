package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/ablation"
	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/msg"
)

// perHead is the heads the per-head work (-ablate, -circuits' activation
// patching, -patch) runs on: those Options.Layers and Heads pick, nil when that is
// every head.
func (r *Report) perHead() ablation.Heads {
	sel := r.picked()
	if len(sel.Layers) == r.Config.Layers && len(sel.Heads) == r.Config.Heads {
		return nil
	}
	var hs ablation.Heads
	for _, l := range sel.Layers {
		for _, h := range sel.Heads {
			hs = append(hs, [2]int{l, h})
		}
	}
	return hs
}

// perHeadWork is the forwards the per-head work asked for would run, and
// the flags that asked for it: -ablate's, -circuits' prefix matching
// and (on examples of a task of repeats) activation patching, and -patch's
// (whose error names a kind the model has not). shownLength
// is the length of the sequence a user gave, which -ablate then runs on.
func (r *Report) perHeadWork(s Subject, shownLength int) (works []analysis.Work, flags []string, err error) {
	o, cfg := r.Options, r.Config
	heads := len(r.perHead().Of(cfg))
	if o.Ablate {
		flags = append(flags, "-ablate")
		if r.RolesOnGiven {
			works = append(works, analysis.AblationWork(heads, 1, shownLength))
		} else {
			works = append(works, analysis.AblationWork(heads, r.ablationSize(s), r.Task.SeqLen()))
		}
	}
	if o.Circuits {
		flags = append(flags, "-circuits")
		works = append(works, analysis.PrefixWork(cfg, o.Samples))
		if !r.RolesOnSequence && analysis.Repeats(r.Task) {
			works = append(works, analysis.PatchWork(cfg, heads, o.Samples, r.Task.SeqLen()))
		}
	}
	if o.Patch.Kind != "" {
		flags = append(flags, "-patch "+o.Patch.Kind)
		w, err := r.patchWork(shownLength)
		if err != nil {
			return nil, nil, err
		}
		works = append(works, w)
	}
	return works, flags, nil
}

// checkPerHeadTime refuses per-head work estimated (analysis.Work.Time, at
// analysis.ModelledRate) to take longer than analysis.MaxPerHeadTime,
// before anything runs, with the estimate and how to pick fewer heads.
func (r *Report) checkPerHeadTime(s Subject, shownLength int) error {
	works, flags, err := r.perHeadWork(s, shownLength)
	if err != nil {
		return err
	}
	var took time.Duration
	var flops float64
	forwards := 0
	for _, w := range works {
		took += w.Time(r.Config)
		flops += w.FLOPs(r.Config)
		forwards += w.Forwards
	}
	if took <= analysis.MaxPerHeadTime {
		return nil
	}
	heads := len(r.perHead().Of(r.Config))
	return errors.Errorf("%s: the work on %s (%s, %.0f TFLOP) would take about %s at a modelled %.0f GFLOP/s; allowed: up to %s; pick fewer heads with -layer and -head (e.g. -layer 0,5-7 -head 3)",
		strings.Join(flags, " "), msg.Count(heads, "head"), msg.Count(forwards, "forward"), flops/1e12, duration(took), analysis.ModelledRate/1e9, duration(analysis.MaxPerHeadTime))
}

// duration is a wait as a person reads it: "40 minutes", "4.6 hours".
func duration(d time.Duration) string {
	switch {
	case d < time.Hour:
		return msg.Count(int(d.Round(time.Minute)/time.Minute), "minute")
	case d == time.Hour:
		return "1 hour"
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f hours", d.Hours())
	}
	return fmt.Sprintf("%.0f days", d.Hours()/24)
}
