package generate

import (
	"math"
	"slices"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"

	"github.com/attnscope/attnscope/model"
)

// Stepper feeds one token per row at the next position and returns the
// logits of the token after it, (B*V) row-major, which may be valid only
// until the next Step (model.Decoder writes each step's into the same
// memory): copy what must outlive it.
type Stepper interface {
	Step(tokens []int) ([]float64, error)
	Len() int // positions fed so far
	Reset()   // back to position 0
	Close() error
}

// New is the stepper for batch rows of up to capacity positions: a
// model.Decoder with the whole cache allocated now, or Recompute when cached
// is false.
func New(m *model.Model, batch, capacity int, cached bool) (Stepper, error) {
	return NewGrowing(m, batch, capacity, capacity, cached)
}

// NewGrowing is New whose cache holds start positions at first and grows as
// the rows reach it (model.NewGrowingDecoder), for a capacity far beyond
// what the prompts need. Recompute grows its graphs anyway.
func NewGrowing(m *model.Model, batch, start, capacity int, cached bool) (Stepper, error) {
	if cached {
		return model.NewGrowingDecoder(m, batch, start, capacity)
	}
	if err := checkCapacity(m, batch, capacity); err != nil {
		return nil, err
	}
	return &Recompute{Model: m, Batch: batch, Capacity: capacity}, nil
}

// CacheAhead is how many positions past the prompt a growing cache holds
// at first: a short continuation never grows it.
const CacheAhead = 64

// MemoryNeed is a rough estimate, in bytes, of what New's stepper takes for
// rows sequences of positions each: model.DecodeBytes with the cache;
// without it, the largest Recompute graph, a forward of positions rounded
// up to RecomputeBucket (model.Config.EstimateBytes, which counts the
// weights as training holds them).
func MemoryNeed(m *model.Model, rows, positions int, cached bool) float64 {
	if cached {
		return m.DecodeBytes(rows, positions)
	}
	cfg := m.Config
	cfg.Context = positions
	if positions <= math.MaxInt-RecomputeBucket {
		cfg.Context = (positions + RecomputeBucket - 1) / RecomputeBucket * RecomputeBucket
	}
	return cfg.EstimateBytes(0, rows)
}

func checkCapacity(m *model.Model, batch, capacity int) error {
	if limit := m.Config.MaxLength(); batch <= 0 || capacity <= 0 || limit > 0 && capacity > limit {
		return errors.Errorf("generate: batch %d and length %d must be positive, the length at most the learned position table's %d", batch, capacity, limit)
	}
	return nil
}

// Recompute is the stepper without a cache: each step runs a full forward
// of the whole prefix and reads the last position's logits. Its graphs
// cover RecomputeBucket positions more at a time (causal attention makes
// the positions after the prefix irrelevant to its logits), so a run of n
// steps builds n/RecomputeBucket graphs, not n.
type Recompute struct {
	Model           *model.Model
	Batch, Capacity int

	history [][]int // each row's tokens so far
	graph   *model.Graph
	vm      gorgonia.VM
}

// RecomputeBucket is how many positions a Recompute graph grows by.
const RecomputeBucket = 16

func (r *Recompute) Len() int {
	if len(r.history) == 0 {
		return 0
	}
	return len(r.history[0])
}

func (r *Recompute) Reset() { r.history = nil }

func (r *Recompute) Close() error {
	if r.vm != nil {
		return r.vm.Close()
	}
	return nil
}

func (r *Recompute) Step(tokens []int) ([]float64, error) {
	if len(tokens) != r.Batch {
		return nil, errors.Errorf("recompute: %d tokens, want one per row (%d)", len(tokens), r.Batch)
	}
	if r.Len() >= r.Capacity {
		return nil, errors.Errorf("recompute: all %d positions written", r.Capacity)
	}
	if r.history == nil {
		r.history = make([][]int, r.Batch)
	}
	for i, t := range tokens {
		r.history[i] = append(r.history[i], t)
	}
	return r.forward()
}

// Fill replaces each row's tokens by rows[i] (all of one length, at most
// Capacity) and returns the logits of the token after the last, as Step
// would have after feeding them one by one: one forward of the whole rows.
func (r *Recompute) Fill(rows [][]int) ([]float64, error) {
	if len(rows) != r.Batch || len(rows[0]) == 0 || len(rows[0]) > r.Capacity {
		return nil, errors.Errorf("recompute: fill with %d rows of %d tokens, want %d rows of 1 to %d", len(rows), len(rows[0]), r.Batch, r.Capacity)
	}
	r.history = make([][]int, r.Batch)
	for i, row := range rows {
		if len(row) != len(rows[0]) {
			return nil, errors.Errorf("recompute: fill row %d has %d tokens, row 0 %d", i, len(row), len(rows[0]))
		}
		r.history[i] = slices.Clone(row)
	}
	return r.forward()
}

// forward runs the graph over each row's tokens and returns the logits of
// each row's last position.
func (r *Recompute) forward() ([]float64, error) {
	n := r.Len()
	if err := r.graphFor(n); err != nil {
		return nil, err
	}
	t := r.graph.Opts.SeqLen
	ids, ones := make([]int, r.Batch*t), make([]float64, r.Batch*t)
	for i, row := range r.history {
		copy(ids[i*t:], row)
	}
	for i := range ones {
		ones[i] = 1
	}
	if err := r.graph.Feed(ids, ids, ones); err != nil {
		return nil, errors.Wrap(err, "recompute")
	}
	r.vm.Reset()
	if err := r.vm.RunAll(); err != nil {
		return nil, errors.Wrap(err, "recompute")
	}
	all, err := model.Float64s(r.graph.Logits.Value())
	if err != nil {
		return nil, errors.Wrap(err, "recompute: logits")
	}
	v := r.Model.Config.Vocab
	out := make([]float64, r.Batch*v)
	for i := range r.history {
		copy(out[i*v:(i+1)*v], all[(i*t+n-1)*v:(i*t+n)*v])
	}
	return out, model.CheckLogits(r.Model, out, func(int) int { return n - 1 })
}

// graphFor makes sure the graph covers n positions.
func (r *Recompute) graphFor(n int) error {
	if r.graph != nil && r.graph.Opts.SeqLen >= n {
		return nil
	}
	if r.vm != nil {
		r.vm.Close()
	}
	t := min(r.Capacity, (n+RecomputeBucket-1)/RecomputeBucket*RecomputeBucket)
	g, err := model.Build(r.Model, model.BuildOptions{Batch: r.Batch, SeqLen: t})
	if err != nil {
		return errors.Wrap(err, "recompute")
	}
	r.graph, r.vm = g, g.NewLeanMachine()
	return nil
}

// Generate continues prompt i by n[i] tokens, picked by s, and returns the
// new tokens of each row. len(prompts) must be the stepper's batch (pad
// with copies and ignore their rows); every prompt has at least one token,
// and the stepper must hold len(prompts[i])+n[i]-1 positions.
func Generate(st Stepper, prompts [][]int, n []int, s *Sampler, vocab int) ([][]int, error) {
	return Stream(st, prompts, n, s, vocab, nil)
}

// Stream is Generate that calls emit as soon as each token is picked, before
// the next step, with the row and the row's tokens so far (the new one last;
// the slice is Stream's, to read before emit returns). Within a step rows
// come in order. An error from emit stops the generation and is returned.
func Stream(st Stepper, prompts [][]int, n []int, s *Sampler, vocab int, emit func(row int, written []int) error) ([][]int, error) {
	return StreamUntil(st, prompts, n, s, vocab, nil, emit)
}

// StreamUntil is Stream whose rows also end when they pick any of the
// tokens stops (the end-of-text tokens: Llama 3's instruct models have
// several), written as the row's last; nil: none.
func StreamUntil(st Stepper, prompts [][]int, n []int, s *Sampler, vocab int, stops []int, emit func(row int, written []int) error) ([][]int, error) {
	n = slices.Clone(n)
	for i, p := range prompts {
		if len(p) == 0 {
			return nil, errors.Errorf("generate: prompt %d is empty", i)
		}
	}
	out := make([][]int, len(prompts))
	st.Reset()
	next := make([]int, len(prompts))
	for step := 0; ; step++ {
		done := true
		for i, p := range prompts {
			switch {
			case step < len(p):
				next[i] = p[step]
			case len(out[i]) < n[i]:
				next[i] = out[i][len(out[i])-1]
			default:
				next[i] = p[0] // done: a filler the row never reads
			}
			done = done && len(out[i]) >= n[i]
		}
		if done {
			return out, nil
		}
		logits, err := st.Step(next)
		if err != nil {
			return nil, err
		}
		for i, p := range prompts {
			if step < len(p)-1 || len(out[i]) >= n[i] {
				continue
			}
			out[i] = append(out[i], s.Pick(logits[i*vocab:(i+1)*vocab]))
			if slices.Contains(stops, out[i][len(out[i])-1]) {
				n[i] = len(out[i])
			}
			if emit == nil {
				continue
			}
			if err := emit(i, out[i]); err != nil {
				return nil, err
			}
		}
	}
}
