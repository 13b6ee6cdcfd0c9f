package model

import (
	"fmt"

	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/engine"
	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/raise"
	"github.com/attnscope/attnscope/layers"
)

// Decoder runs a model one position at a time over a batch of B sequences,
// keeping each layer's keys and values (or, with latent attention, its
// latents) in a cache of Capacity positions, so a step costs one position's
// projections and one row of attention rather than a forward pass over the
// whole prefix. Every row advances together: step s feeds position s of
// each row. Its logits equal those of a full forward (Build) of the same
// prefix (TestDecoderMatchesForward), also across the steps where the cache
// grows.
type Decoder struct {
	Model    *Model
	Batch    int // B
	Capacity int // C: the positions the cache holds now
	Limit    int // the positions a row may reach; the cache grows up to it
	Path     layers.Path

	g                 *gorgonia.ExprGraph
	vm                *engine.Machine
	tokens, positions *gorgonia.Node // (B) Int: each row's new token and its position
	views             []*decodeView  // what the layers see, one per distinct window and rotary frequencies
	layers            []cacheLayer
	logits            *gorgonia.Node // (B, V)
	pos               int            // positions written so far
	// The Int inputs' values, written in place at each step, and the
	// logits Step returns, converted into the same memory at each step.
	tokenIDs, positionIDs []int
	logits64              []float64
}

// cacheLayer is one layer's cache inputs and what its step writes to them:
// its new keys and values (or latent), at places fixed when it is built.
type cacheLayer struct {
	keys, values, latent       *gorgonia.Node // (B, G, C, d) each, or the latent (B, C, r)
	keysAt, valuesAt, latentAt slotLayout
	view                       *decodeView
	out                        layers.DecodeOutput
}

// NewDecoder builds the decoding graph of m for batch rows and a cache of
// capacity positions (at most the learned position table's Context), all
// allocated now. It runs on the model's path (Config.Attention) and binds
// m's weights by reference.
func NewDecoder(m *Model, batch, capacity int) (*Decoder, error) {
	return NewGrowingDecoder(m, batch, capacity, capacity)
}

// NewGrowingDecoder is a decoder whose rows may reach limit positions (at
// most the learned position table's Context) but whose cache holds start
// positions at first (clamped to [1, limit]): a step that finds it full
// rebuilds the graph with twice the positions, at most limit, and copies
// the positions written so far into it. Memory then follows what is
// written, not what might be.
func NewGrowingDecoder(m *Model, batch, start, limit int) (*Decoder, error) {
	if err := checkBuild(m, BuildOptions{Batch: batch, SeqLen: limit}); err != nil {
		return nil, errors.Wrap(err, "decoder")
	}
	d, err := buildDecoder(m, batch, max(1, min(start, limit)))
	if err != nil {
		return nil, err
	}
	d.Limit = limit
	if limit >= HugePagesFrom {
		WeightsInHugePages(m)
	}
	return d, nil
}

// HugePagesFrom is the length (steps) from which NewGrowingDecoder first
// moves the model's weights into huge pages (WeightsInHugePages). The move
// copies them once per process, about 1.2 s for GPT-2 small's 500 MB here,
// and a step then takes about a fifth less, which long prompts and long
// caches dilute: on GPT-2 small's shape `sample -n 64` took 2.0 s without
// the move and 2.3-3.1 s with it, `-n 300` 8.0 s against 8.3-8.5 s, so only
// the longest runs move them (cmd/bench does before it times).
const HugePagesFrom = 1024

// WeightsInHugePages moves m's float32 weights into 2 MiB pages
// (kernels.HugePages), where a decoding step streams them faster; a second
// call finds them there.
func WeightsInHugePages(m *Model) { hugePages(float32Weights(m)...) }

// hugePages is kernels.HugePages, a variable for the test that checks
// which memory WeightsInHugePages hands it.
var hugePages = kernels.HugePages

// float32Weights are m's float32 weights. A decoding step reads each of
// them once, at the speed memory delivers them: in huge pages
// (kernels.HugePages) the GEMVs read a Llama of stories110M's shape
// faster (cmd/bench/NOTES.md).
func float32Weights(m *Model) [][]float32 {
	var weights [][]float32
	for _, p := range m.Params {
		if p.Value == nil {
			continue // mapped from its file: the page cache's pages
		}
		if w, ok := p.Value.Data().([]float32); ok {
			weights = append(weights, w)
		}
	}
	return weights
}

// buildDecoder builds the graph and machine of a cache of capacity
// positions; m and capacity are checked.
func buildDecoder(m *Model, batch, capacity int) (d *Decoder, err error) {
	path, err := m.Config.Path()
	if err != nil {
		return nil, errors.Wrap(err, "decoder")
	}
	defer raise.Catch(&err)
	d = &Decoder{Model: m, Batch: batch, Capacity: capacity, Limit: capacity, Path: path, g: gorgonia.NewGraph()}
	gr := &Graph{G: d.g, Model: m, Opts: BuildOptions{Batch: batch, SeqLen: capacity}, Path: path}
	d.inputs()
	params := map[string]*gorgonia.Node{}
	for _, p := range m.Params {
		params[p.Name] = paramNode(d.g, p)
	}
	x := gr.scaleEmbedding(raise.Must(gr.embedding(params["tok_emb.weight"]).Forward(d.tokens))) // (B, D)
	if table := gr.positionTable(params); table != nil {
		pos := raise.Must(gr.embedding(table).Forward(d.positions)) // (B, D)
		x = node(EmbedName)(path.Add(x, pos))                       // (B, D)
	}
	for i := range d.layers {
		l := &d.layers[i]
		v := l.view
		in := layers.DecodeInputs{Keys: l.keys, Values: l.values, Latent: l.latent, Spans: v.spans, Bias: v.bias, Cos: v.cos, Sin: v.sin}
		out, err := gr.block(params, i).Decode(x, in)
		raise.If(errors.Wrapf(err, "decoder: block %d", i))
		l.out, x = out, out.Out // (B, D)
	}
	if m.Config.MLP {
		x = raise.Must(gr.norm(params, "ln_f").Forward(x)) // (B, D)
	}
	d.logits = gr.capLogits(raise.Must(gr.lmHead(params).Forward(x))) // (B, V)
	d.vm = raise.Must(engine.NewMachine(d.g))                         // read through d.vm.Value
	return d, nil
}

// inputs adds the token, position, bias, rotary and cache inputs.
func (d *Decoder) inputs() {
	cfg, b, c, dt := d.Model.Config, d.Batch, d.Capacity, d.Model.Dtype
	kv, dh := cfg.KVHeadCount(), cfg.DHead()
	d.tokenIDs, d.positionIDs = make([]int, b), make([]int, b)
	d.tokens = intInput(d.g, "decode.tokens", d.tokenIDs)
	d.positions = intInput(d.g, "decode.positions", d.positionIDs)
	d.layers = make([]cacheLayer, cfg.Layers)
	for i := range d.layers {
		d.layers[i].view = d.viewOf(cfg.LayerWindow(i), cfg.RopeFrequencies(i))
	}
	for i := range d.layers {
		cache := func(what string, shape ...int) *gorgonia.Node {
			return layers.NewParam(d.g, fmt.Sprintf("blocks.%d.attn.cache.%s", i, what), newDense(dt, shape, make([]float64, product(shape))))
		}
		l := &d.layers[i]
		if cfg.KVLatent > 0 {
			l.latent = cache("latent", b, c, cfg.KVLatent)
			l.latentAt = newSlotLayout(l.latent.Shape(), 0, 1, false)
			continue
		}
		transposed := d.Path != layers.Gorgonia // for ops.CacheAttention
		shape := []int{b, kv, c, dh}
		if transposed {
			shape = []int{b, kv, dh, c}
		}
		l.keys, l.values = cache("keys", shape...), cache("values", shape...)
		l.keysAt, l.valuesAt = newSlotLayout(shape, 0, 2, transposed), newSlotLayout(shape, 1, 2, transposed)
	}
}

// Len is the number of positions each row has written.
func (d *Decoder) Len() int { return d.pos }

// Reset empties the cache: the next Step writes position 0.
func (d *Decoder) Reset() { d.pos = 0 }

// Close releases the machine.
func (d *Decoder) Close() error { return d.vm.Close() }

// run computes the step's graph once.
func (d *Decoder) run() error { return d.vm.RunAll() }

// value is n's value after the last run.
func (d *Decoder) value(n *gorgonia.Node) gorgonia.Value { return d.vm.Value(n) }

// Step feeds tokens (B), each row's token at position Len(), writes their
// keys and values into the cache and returns the logits of the next token,
// (B*V) row-major, valid until the next Step (which writes the next ones
// into the same memory: a step allocates nothing of the vocabulary's
// size). Logits holding a NaN or an infinity are an error (NonFinite).
func (d *Decoder) Step(tokens []int) ([]float64, error) {
	cfg := d.Model.Config
	if len(tokens) != d.Batch {
		return nil, errors.Errorf("decode: %d tokens, want one per row (%d)", len(tokens), d.Batch)
	}
	for i, t := range tokens {
		if t < 0 || t >= cfg.Vocab {
			return nil, errors.Errorf("decode: token id %d of row %d is outside the vocabulary [0, %d)", t, i, cfg.Vocab)
		}
	}
	if d.pos >= d.Capacity {
		if d.Capacity >= d.Limit {
			return nil, errors.Errorf("decode: the cache holds %d positions, all written", d.Limit)
		}
		doubled := d.Capacity + min(d.Capacity, d.Limit-d.Capacity) // 2C at most Limit, without overflow
		if err := d.grow(doubled); err != nil {
			return nil, errors.Wrapf(err, "decode: growing the cache to %d positions", doubled)
		}
	}
	copy(d.tokenIDs, tokens)
	for i := range d.positionIDs {
		d.positionIDs[i] = d.pos
	}
	for _, v := range d.views {
		d.fillBias(v)
		d.fillRotary(v)
	}
	if err := d.run(); err != nil {
		return nil, errors.Wrap(err, "decode")
	}
	if err := d.writeCache(); err != nil {
		return nil, err
	}
	d.pos++
	logits, err := AppendFloat64s(d.logits64[:0], d.value(d.logits))
	if err != nil {
		return nil, errors.Wrap(err, "decode: logits")
	}
	d.logits64 = logits
	position := d.pos - 1
	return logits, CheckLogits(d.Model, logits, func(int) int { return position })
}

// grow replaces the graph by one whose cache holds capacity positions and
// copies the Len() positions written so far into it. The old graph is
// released only once the copy is made, so for that moment both are held
// (DecodeBytes counts it).
func (d *Decoder) grow(capacity int) error {
	next, err := buildDecoder(d.Model, d.Batch, capacity)
	if err != nil {
		return err
	}
	for i, l := range d.layers {
		to := next.layers[i]
		transposed := d.Path != layers.Gorgonia // the fused path's keys and values, (B, G, d, C)
		var err error
		if l.latent != nil {
			err = copyCache(to.latent, l.latent, d.pos, false)
		} else if err = copyCache(to.keys, l.keys, d.pos, transposed); err == nil {
			err = copyCache(to.values, l.values, d.pos, transposed)
		}
		if err != nil {
			next.Close()
			return errors.Wrapf(err, "layer %d", i)
		}
	}
	if err := d.vm.Close(); err != nil {
		next.Close()
		return err
	}
	next.Limit, next.pos = d.Limit, d.pos
	*d = *next
	return nil
}

// copyCache copies the first pos slots of cache src into dst, a cache of
// the same layout with more slots: (..., C, w), or (..., w, C) when
// transposed.
func copyCache(dst, src *gorgonia.Node, pos int, transposed bool) error {
	from, to := src.Shape(), dst.Shape()
	slots, inner := len(from)-2, from[len(from)-1] // slot axis and the values per slot and block
	if transposed {
		slots, inner = len(from)-1, 1
	}
	oldC, newC := from[slots], to[slots]
	switch s := src.Value().Data().(type) {
	case []float64:
		copySlots(dst.Value().Data().([]float64), s, oldC, newC, inner, pos)
	case []float32:
		copySlots(dst.Value().Data().([]float32), s, oldC, newC, inner, pos)
	default:
		return errors.Errorf("%s: cache of %T", src.Name(), s)
	}
	return nil
}

// copySlots copies slots [0, pos) of every block of src, blocks of oldC
// slots of inner values each, into the same block of dst, whose blocks hold
// newC slots.
func copySlots[T float32 | float64](dst, src []T, oldC, newC, inner, pos int) {
	for b := 0; b < len(src)/(oldC*inner); b++ {
		copy(dst[b*newC*inner:][:pos*inner], src[b*oldC*inner:][:pos*inner])
	}
}

// fill writes row into every batch row of n's value (n holds B copies of
// len(row) values).
func fill(n *gorgonia.Node, row []float64) {
	switch v := n.Value().Data().(type) {
	case []float64:
		for o := 0; o < len(v); o += len(row) {
			copy(v[o:], row)
		}
	case []float32:
		for o := 0; o < len(v); o++ {
			v[o] = float32(row[o%len(row)])
		}
	}
}

// writeCache copies each layer's new keys and values (or latent) into slot
// Len() of its cache, where the step has not written them itself (the
// fused path's CacheAttention does).
func (d *Decoder) writeCache() error {
	for i, l := range d.layers {
		var err error
		switch {
		case l.out.Latent != nil:
			err = writeSlot(l.latent, d.value(l.out.Latent), l.latentAt, d.pos)
		case l.out.KV != nil:
			if err = writeSlot(l.keys, d.value(l.out.KV), l.keysAt, d.pos); err == nil {
				err = writeSlot(l.values, d.value(l.out.KV), l.valuesAt, d.pos)
			}
		}
		if err != nil {
			return errors.Wrapf(err, "decode: layer %d cache", i)
		}
	}
	return nil
}

// slotLayout says where writeSlot's entries go: part `part` of `parts` of
// the new entries (each of b batch rows holds parts x n x w values: (B, 2,
// G, d) for keys and values, (B, r) for a latent) into a slot of a cache
// (B, n, C, w), (B, C, w), or the fused path's transposed (B, n, w, C).
type slotLayout struct {
	b, n, c, w, part, parts int
	transposed              bool
}

// newSlotLayout is the layout of part `part` of `parts` in a cache of shape
// s (transposed: the slots are its last axis).
func newSlotLayout(s []int, part, parts int, transposed bool) slotLayout {
	c, w := s[len(s)-2], s[len(s)-1]
	if transposed {
		c, w = w, c
	}
	return slotLayout{b: s[0], n: product(s) / (s[0] * c * w), c: c, w: w, part: part, parts: parts, transposed: transposed}
}

// writeSlot copies the new entries v into slot pos of cache, as l says.
func writeSlot(cache *gorgonia.Node, v gorgonia.Value, l slotLayout, pos int) error {
	src, ok := v.(*tensor.Dense)
	if !ok {
		return errors.Errorf("no value for %s", cache.Name())
	}
	if src.IsView() {
		src = src.Materialize().(*tensor.Dense)
	}
	if src.DataSize() != l.b*l.parts*l.n*l.w {
		return errors.Errorf("%s: %d new entries do not fit a cache of shape %v", cache.Name(), src.DataSize(), cache.Shape())
	}
	dst := cache.Value().(*tensor.Dense)
	switch dst.Dtype() {
	case tensor.Float64:
		copySlot(dst.Float64s(), src.Float64s(), l, pos)
	case tensor.Float32:
		copySlot(dst.Float32s(), src.Float32s(), l, pos)
	}
	return nil
}

func copySlot[T float32 | float64](dst, src []T, l slotLayout, pos int) {
	for r := 0; r < l.b; r++ {
		for e := 0; e < l.n; e++ {
			from := src[((r*l.parts+l.part)*l.n+e)*l.w:][:l.w]
			block := (r*l.n + e) * l.c * l.w
			if !l.transposed {
				copy(dst[block+pos*l.w:][:l.w], from)
				continue
			}
			for i, x := range from {
				dst[block+i*l.c+pos] = x
			}
		}
	}
}
