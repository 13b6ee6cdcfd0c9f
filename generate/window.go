package generate

import (
	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// Window is a stepper whose rows may pass the model's context of Size
// positions, as nanoGPT's sample.py lets them: it crops each row to its
// last Size tokens. Until a row fills the context it steps as NewGrowing's
// stepper does (the KV cache, or Recompute); from the step that would pass
// it on, every step is one full forward of each row's last Size tokens,
// which refills the positions from 0 (Recompute.Fill). A learned position
// table, or a rotary angle, moves every cached key once the window slides,
// so nothing of the cache can be read again after a crop: past the context
// each token costs one forward of Size positions, as it does in nanoGPT.
type Window struct {
	Stepper     // the steps before the first crop
	Size    int // the positions the model sees at once

	model *model.Model
	last  [][]int    // each row's last Size tokens at most
	fed   int        // positions fed since Reset
	full  *Recompute // the forward of the cropped window; the inner stepper itself without a cache
}

// NewWindow is the stepper of batch rows that sees size positions at once
// and crops to them: NewGrowing's stepper (a cache of start positions
// growing to size, or Recompute) up to size positions, a full forward of
// the last size tokens after.
func NewWindow(m *model.Model, batch, start, size int, cached bool) (*Window, error) {
	inner, err := NewGrowing(m, batch, start, size, cached)
	if err != nil {
		return nil, err
	}
	w := &Window{Stepper: inner, Size: size, model: m}
	if r, ok := inner.(*Recompute); ok {
		w.full = r
	}
	return w, nil
}

// Len is the positions fed since Reset, crops included: it passes Size.
func (w *Window) Len() int { return w.fed }

func (w *Window) Reset() {
	w.Stepper.Reset()
	w.last, w.fed = nil, 0
}

func (w *Window) Close() error {
	err := w.Stepper.Close()
	if w.full != nil && w.full != w.Stepper {
		if closeErr := w.full.Close(); err == nil {
			err = closeErr
		}
	}
	return err
}

// Step feeds one token per row and returns the logits of the next, from
// the last Size tokens of each row.
func (w *Window) Step(tokens []int) ([]float64, error) {
	if w.last == nil {
		w.last = make([][]int, len(tokens))
	}
	if len(tokens) != len(w.last) {
		return nil, errors.Errorf("window: %d tokens, want one per row (%d)", len(tokens), len(w.last))
	}
	for i, t := range tokens {
		row := append(w.last[i], t)
		if len(row) > w.Size {
			row = row[len(row)-w.Size:] // append reallocates as it fills: a row holds O(Size)
		}
		w.last[i] = row
	}
	w.fed++
	if w.fed <= w.Size {
		return w.Stepper.Step(tokens)
	}
	return w.crop()
}

// crop computes the logits of a full forward of each row's last Size
// tokens.
func (w *Window) crop() ([]float64, error) {
	if w.full == nil {
		w.full = &Recompute{Model: w.model, Batch: len(w.last), Capacity: w.Size}
	}
	return w.full.Fill(w.last)
}

// WindowMemoryNeed is a rough estimate, in bytes, of what a Window of size
// positions takes for rows sequences: without the cache MemoryNeed's
// Recompute of size positions, which crops too; with it, the cache of size
// positions (model.DecodeBytes, the weights included) and beside it the
// values of a crop's forward of size positions (model.Config.InferenceBytes
// without the weights, which the two share).
func WindowMemoryNeed(m *model.Model, rows, size int, cached bool) float64 {
	if !cached {
		return MemoryNeed(m, rows, size, false)
	}
	cfg := m.Config
	cfg.Context = size
	const elem = 4 // bytes of a float32
	return m.DecodeBytes(rows, size) + cfg.InferenceBytes(rows) - cfg.HeldParamCount()*elem
}
