package analysis

import (
	"fmt"
	"math/rand/v2"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/heads"
	"github.com/attnscope/attnscope/model"
)

// CorpusStream is the stream CorpusHeads draws its windows' starts from.
const CorpusStream = InspectStreams | 3

// MaxCorpusWindows bounds the windows of one CorpusHeads call: at GPT-2
// small's size a million windows would take days on a CPU.
const MaxCorpusWindows = 1_000_000

// CorpusOptions say which windows of a text CorpusHeads scores.
type CorpusOptions struct {
	Windows int    // how many windows
	Length  int    // tokens in each window (T)
	Seed    uint64 // the windows' starts are drawn from PCG(Seed, CorpusStream)
	// Progress, when set, hears the windows done of the total.
	Progress func(done, total int)
}

// CorpusHead is one head's statistics over the windows, one Spread per
// heads.CorpusStats entry, in that order.
type CorpusHead struct {
	Layer  int           `json:"layer"`
	Head   int           `json:"head"`
	Scores []CorpusScore `json:"scores"`
}

// CorpusScore is one statistic's spread over the windows.
type CorpusScore struct {
	Name string `json:"score"`
	heads.Spread
}

// Corpus is every head's statistics over windows of one text.
type Corpus struct {
	Tokens  int          `json:"tokens"` // the text's length in tokens
	Windows int          `json:"windows"`
	Length  int          `json:"window_length"`
	Seed    uint64       `json:"seed"`
	Heads   []CorpusHead `json:"heads"` // in the model's order: layer, then head
}

// CorpusHeads scores every head of m over o.Windows windows of o.Length
// tokens of ids, a text in m's tokenizer (heads.Window's statistics), and
// keeps each statistic's mean and spread over the windows. It streams: one
// graph of one window is built and run once per window, and what it keeps
// is a few numbers a head, so its memory does not grow with the windows.
// The windows start at offsets drawn uniformly from the text (they may
// overlap), the same for the same seed.
func CorpusHeads(m *model.Model, ids []int, o CorpusOptions) (*Corpus, error) {
	if err := checkCorpus(m.Config, ids, o); err != nil {
		return nil, err
	}
	cfg, t := m.Config, o.Length
	g, err := model.Build(m, model.BuildOptions{Batch: 1, SeqLen: t, Cache: Weights(m)})
	if err != nil {
		return nil, errors.Wrap(err, "building the inference graph")
	}
	vm := g.NewLeanMachine()
	defer vm.Close()
	c := &Corpus{Tokens: len(ids), Windows: o.Windows, Length: t, Seed: o.Seed}
	spreads := make([][heads.NumCorpusStats]heads.Spread, cfg.Layers*cfg.Heads)
	batch := data.NewBatch(1, t)
	rng := rand.New(rand.NewPCG(o.Seed, CorpusStream))
	var win *heads.Window
	var maps []float64 // one layer's (1, H, T, T)
	for n := range o.Windows {
		if o.Progress != nil {
			o.Progress(n, o.Windows)
		}
		start := rng.IntN(len(ids) - t + 1)
		loadWindow(batch, ids[start:start+t])
		win = heads.NewWindow(win, batch.Tokens)
		vm.Reset()
		if err := g.Feed(batch.Tokens, batch.Targets, batch.Mask); err != nil {
			return nil, err
		}
		if err := vm.RunAll(); err != nil {
			return nil, errors.Wrap(err, "running the model")
		}
		for l := range cfg.Layers {
			if maps, err = layerMaps(g, m, l, maps[:0], start); err != nil {
				return nil, err
			}
			for h := range cfg.Heads {
				s, err := win.Scores(maps[h*t*t : (h+1)*t*t])
				if err != nil {
					return nil, errors.Wrapf(err, "layer %d head %d, window at token %d", l, h, start)
				}
				for k, x := range s {
					spreads[l*cfg.Heads+h][k].Add(x)
				}
			}
		}
	}
	for i, sp := range spreads {
		head := CorpusHead{Layer: i / cfg.Heads, Head: i % cfg.Heads}
		for k, name := range heads.CorpusStats {
			head.Scores = append(head.Scores, CorpusScore{Name: name, Spread: sp[k]})
		}
		c.Heads = append(c.Heads, head)
	}
	return c, nil
}

// checkCorpus refuses what CorpusHeads cannot run: too few or too many
// windows, a window longer than the text or than a learned position
// table, an id outside the vocabulary, a window too big for memory.
func checkCorpus(cfg model.Config, ids []int, o CorpusOptions) error {
	switch {
	case o.Windows < 1 || o.Windows > MaxCorpusWindows:
		return errors.Errorf("%d windows: must be in [1, %d]", o.Windows, MaxCorpusWindows)
	case o.Length < 2:
		return errors.Errorf("windows of %d tokens: need at least 2 (a head chooses among keys only from the second position on)", o.Length)
	case cfg.MaxLength() > 0 && o.Length > cfg.MaxLength():
		return errors.Errorf("windows of %d tokens: longer than the model's context of %d (learned positions)", o.Length, cfg.MaxLength())
	case len(ids) < o.Length:
		return errors.Errorf("the text is %d tokens, shorter than one window of %d", len(ids), o.Length)
	}
	for p, id := range ids {
		if id < 0 || id >= cfg.Vocab {
			return errors.Errorf("token %d at position %d is outside the model's vocabulary [0, %d)", id, p, cfg.Vocab)
		}
	}
	at := cfg
	at.Context = o.Length
	return model.CheckMemory(at.InferenceBytes(1), fmt.Sprintf("a forward of a window of %d tokens", o.Length), "give shorter windows")
}

// loadWindow puts one window into the batch of one row: each position's
// target the next token, the last none (id 0, unscored).
func loadWindow(b *data.Batch, window []int) {
	tokens, targets, mask := b.Row(0)
	copy(tokens, window)
	for p := range window {
		targets[p], mask[p] = 0, 0
		if p+1 < len(window) {
			targets[p], mask[p] = window[p+1], 1
		}
	}
}

// layerMaps appends layer l's attention weights of the last run, (1, H,
// T, T), to dst, refusing a NaN or an infinity (model.NonFinite) in the
// window starting at token start.
func layerMaps(g *model.Graph, m *model.Model, l int, dst []float64, start int) ([]float64, error) {
	v, err := g.Activation(model.AttnWeights(l))
	if err != nil {
		return nil, err
	}
	out, err := model.AppendFloat64s(dst, v)
	if err != nil {
		return nil, errors.Wrap(err, model.AttnWeights(l))
	}
	if i := model.FirstNonFinite(out); i >= 0 {
		t := g.Opts.SeqLen
		return nil, model.NonFinite(m, fmt.Sprintf("layer %d head %d: attention weight (query %d, key %d) of the window at token %d is %v",
			l, i/(t*t), i/t%t, i%t, start, out[i]))
	}
	return out, nil
}
