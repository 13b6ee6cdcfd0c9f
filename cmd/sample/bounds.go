package main

import (
	"fmt"
	"math"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// memoryBound says whether rows x positions of decoding fit model.MaxMemory
// (generate.MemoryNeed) and words a refusal. Every figure is computed
// before a graph is built; positions beyond MaxInt count as MaxInt, which
// no model fits.
type memoryBound struct {
	m      *model.Model
	cached bool
}

func (b memoryBound) need(rows int, positions uint64) float64 {
	return generate.MemoryNeed(b.m, rows, int(min(positions, math.MaxInt)), b.cached)
}

func (b memoryBound) fits(rows int, positions uint64) bool {
	return b.need(rows, positions) <= model.MaxMemory
}

// over is the figure of a refusal: "2 rows of 101 positions need an
// estimated 3.0 TiB for the KV cache (limit 8.0 GiB)".
func (b memoryBound) over(rows int, positions uint64) string {
	what, verb := "1 row", "needs"
	if rows != 1 {
		what, verb = fmt.Sprintf("%d rows", rows), "need"
	}
	cache := "the KV cache"
	if !b.cached {
		cache = "the recomputed forward pass (-no-cache)"
	}
	return fmt.Sprintf("%s of %d positions %s an estimated %s for %s (limit %s)",
		what, positions, verb, msg.Bytes(b.need(rows, positions)), cache, msg.Bytes(model.MaxMemory))
}

// checkContinuation refuses -samples continuations of a prompt of prompt
// tokens by n more that would not fit, naming the flag to lower and the
// largest value that fits: -samples when one row fits, else -n.
func (b memoryBound) checkContinuation(rows, prompt, n int) error {
	positions := uint64(prompt) + uint64(n) // both at most MaxInt: no wrap
	switch {
	case b.fits(rows, positions):
		return nil
	case rows > 1 && b.fits(1, positions):
		most := largest(rows-1, func(r int) bool { return b.fits(r, positions) })
		return errors.Errorf("-samples %d: %s; use -samples %d or less", rows, b.over(rows, positions), most)
	case b.fits(rows, uint64(prompt)+1):
		most := largest(n-1, func(k int) bool { return b.fits(rows, uint64(prompt)+uint64(k)) })
		return errors.Errorf("-n %d: %s; use -n %d or less", n, b.over(rows, positions), most)
	case rows > 1 && b.fits(1, uint64(prompt)+1):
		return errors.Errorf("-samples %d: %s; use fewer -samples and a smaller -n", rows, b.over(rows, positions))
	}
	return errors.Errorf("the prompt of %d tokens: %s; use a shorter prompt", prompt, b.over(rows, positions))
}

// checkExamples refuses -samples held-out examples of positions each that
// would not fit, naming the most that would.
func (b memoryBound) checkExamples(rows, positions int) error {
	if b.fits(rows, uint64(positions)) {
		return nil
	}
	if most := largest(rows-1, func(r int) bool { return b.fits(r, uint64(positions)) }); most > 0 {
		return errors.Errorf("-samples %d: %s; use -samples %d or less", rows, b.over(rows, uint64(positions)), most)
	}
	return errors.Errorf("-samples %d: %s; not even one example fits", rows, b.over(rows, uint64(positions)))
}

// largest is the largest x in [1, hi] for which ok holds, ok being true up
// to some x and false after it; 0 when ok(1) is false.
func largest(hi int, ok func(int) bool) int {
	lo := 0 // ok(lo) holds, or lo is 0
	for lo < hi {
		mid := lo + (hi-lo)/2 + (hi-lo)%2 // the upper middle, without overflow
		if ok(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}
