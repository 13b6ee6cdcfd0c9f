package main

import (
	"fmt"
	"io"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// contextPlan is how a continuation meets the model's context: what of the
// prompt is fed, how many tokens are written, and whether rows are cropped
// to their last window tokens once they pass it (generate.Window), as
// nanoGPT's sample.py crops its context to block_size.
type contextPlan struct {
	feed   []int // the prompt as fed: its last window tokens when it is longer
	n      int   // tokens to write
	window int   // crop to the last window tokens; 0: never
	// what the context is, for the notice and the refusals: "its learned
	// position table"
	what string
}

// planContinuation plans -n tokens (0: the default) after prompt. A learned
// position table is cropped to, as nanoGPT does. Other positions extrapolate
// on a lab model, while a model trained elsewhere stops at its
// max_position_embeddings; -crop crops to the context for both.
func planContinuation(cfg model.Config, pretrained, crop bool, prompt []int, n int) (contextPlan, error) {
	learned := cfg.PositionKind() == model.PositionLearned
	p := contextPlan{feed: prompt, n: n, what: contextWhat(learned, pretrained)}
	size := cfg.Context
	stops := pretrained && !learned && !crop
	if p.n == 0 {
		p.n = defaultLength(cfg, pretrained, stops, len(prompt))
	}
	switch {
	case !learned && !crop && !pretrained:
		return p, nil // ALiBi, rotary, sinusoidal or none write on past the trained length
	case stops && len(prompt) > size:
		return p, errors.Errorf("the prompt has %d tokens, longer than the model's context of %d (%s); -crop keeps its last %d tokens",
			len(prompt), size, p.what, size)
	case stops && p.n > size-len(prompt)+1: // n - 1 + prompt could wrap
		return p, errors.Errorf("-n %d: a prompt of %s leaves room for %d more in the model's context of %d (%s); -crop writes on from the last %d tokens",
			p.n, msg.Count(len(prompt), "token"), size-len(prompt)+1, size, p.what, size)
	case stops || p.n <= size-len(prompt)+1:
		return p, nil
	}
	p.window = size
	if len(prompt) > size {
		p.feed = prompt[len(prompt)-size:]
	}
	return p, nil
}

// contextWhat names what sets the context.
func contextWhat(learned, pretrained bool) string {
	switch {
	case learned:
		return "its learned position table"
	case pretrained:
		return "max_position_embeddings"
	}
	return "the length it was trained on"
}

// defaultLength is -n's default: pretrainedN for a model trained elsewhere
// (within its context where it stops there); to the end of a lab model's
// learned position table (a window's worth once the prompt fills it), else
// its trained length.
func defaultLength(cfg model.Config, pretrained, stops bool, prompt int) int {
	room := cfg.Context - prompt + 1
	switch {
	case pretrained && stops:
		return max(1, min(pretrainedN, room))
	case pretrained:
		return pretrainedN
	case cfg.PositionKind() == model.PositionLearned && room > 0:
		return room
	}
	return cfg.Context
}

// cropNote is the one line said before writing when rows will pass the
// context.
func (p contextPlan) cropNote(prompt int) string {
	return fmt.Sprintf("note: a prompt of %s and -n %d pass the model's context of %d (%s): past it each token is predicted from the last %d, cropped as nanoGPT's sample.py does",
		msg.Count(prompt, "token"), p.n, p.window, p.what, p.window)
}

// newStepper is the stepper of rows continuations of a prompt of prompt
// tokens planned by p: a growing cache (or Recompute) when they stay within
// the context, else a generate.Window, said on notices first.
func newStepper(m *model.Model, rows, prompt int, p contextPlan, cached bool, notices io.Writer) (generate.Stepper, error) {
	if p.window == 0 {
		return generate.NewGrowing(m, rows, len(p.feed)+generate.CacheAhead, len(p.feed)+p.n-1, cached)
	}
	w, err := generate.NewWindow(m, rows, min(len(p.feed)+generate.CacheAhead, p.window), p.window, cached)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(notices, p.cropNote(prompt))
	return w, nil
}

// checkPlan refuses rows continuations planned by p that would not fit
// model.MaxMemory: checkContinuation's bound within the context; past it,
// the window's cache and the forward of a crop, whatever -n.
func (b memoryBound) checkPlan(rows int, p contextPlan) error {
	if p.window == 0 {
		return b.checkContinuation(rows, len(p.feed), p.n)
	}
	need := func(r int) float64 { return generate.WindowMemoryNeed(b.m, r, p.window, b.cached) }
	if need(rows) <= model.MaxMemory {
		return nil
	}
	verb := "need"
	if rows == 1 {
		verb = "needs"
	}
	over := fmt.Sprintf("writing past the model's context of %d positions, %s %s an estimated %s for the window and the forward pass of a crop (limit %s)",
		p.window, msg.Count(rows, "row"), verb, msg.Bytes(need(rows)), msg.Bytes(model.MaxMemory))
	if most := largest(rows-1, func(r int) bool { return need(r) <= model.MaxMemory }); most > 0 {
		return errors.Errorf("-samples %d: %s; use -samples %d or less", rows, over, most)
	}
	return errors.New(over)
}
