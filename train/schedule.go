package train

import "math"

// LRSchedule is linear warmup followed by a constant learning rate or a
// cosine decay. Steps are numbered from 1 (the first update) to Steps.
type LRSchedule struct {
	Peak   float64 // learning rate reached at the end of warmup
	Min    float64 // floor of the cosine decay (0 decays to zero)
	Warmup int     // number of warmup steps; 0 starts at Peak
	Steps  int     // total number of steps of the run
	Cosine bool    // false keeps Peak after warmup
}

// At returns the learning rate used by update number step:
//
//	step <= Warmup:  Peak · step / Warmup
//	after warmup:    Peak (constant), or
//	                 Min + (Peak − Min) · ½ (1 + cos(π · (step − Warmup) / (Steps − Warmup)))
//
// so warmup ends exactly at Peak and the cosine reaches Min at the last step.
func (s LRSchedule) At(step int) float64 {
	if s.Warmup > 0 && step <= s.Warmup {
		return s.Peak * float64(step) / float64(s.Warmup)
	}
	if !s.Cosine || s.Steps <= s.Warmup {
		return s.Peak
	}
	progress := math.Min(1, float64(step-s.Warmup)/float64(s.Steps-s.Warmup))
	return s.Min + (s.Peak-s.Min)*0.5*(1+math.Cos(math.Pi*progress))
}
