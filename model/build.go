package model

import (
	"fmt"

	"github.com/attnscope/attnscope/layers"
	"github.com/pkg/errors"
	"gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BuildOptions fixes the static sizes and the kind of graph Build makes.
type BuildOptions struct {
	Batch      int  // B
	SeqLen     int  // T, 1 <= T <= Config.Context
	Train      bool // also builds gradients (gorgonia.Grad) and, when Config.Dropout > 0, dropout mask inputs
	KeyPadding bool // adds a (B, T) key padding mask input (1 keep, 0 padded)
	// HeadMask adds, per layer, a head mask and a head fill input (B, H, T, d)
	// applied to the head outputs before the head merge (see
	// layers.MultiHeadSelfAttention and ablation.go).
	HeadMask bool
}

// Graph is one model bound into one Gorgonia graph of fixed batch and length.
// Run it with the machine from NewMachine after Feed.
type Graph struct {
	G            *gorgonia.ExprGraph // what NewMachine runs; a Train graph keeps only what the outputs and gradients need
	Model        *Model
	Opts         BuildOptions
	Tokens       *gorgonia.Node   // (B*T) Int token ids, row-major (b, t)
	Targets      *gorgonia.Node   // (B*T) Int next-token targets
	LossMask     *gorgonia.Node   // (B*T) model dtype, 1 where the position is scored, else 0
	Logits       *gorgonia.Node   // (B*T, V)
	Loss         *gorgonia.Node   // scalar: mean cross-entropy over scored positions
	Attention    []*gorgonia.Node // one per layer, (B, H, T, T), rows = queries, cols = keys
	DropoutMasks []*gorgonia.Node // one per layer (B, H, T, T) when Train && Dropout > 0, else nil
	KeyMask      *gorgonia.Node   // (B, T) when KeyPadding, else nil
	HeadMasks    []*gorgonia.Node // one per layer (B, H, T, d) when HeadMask, else nil
	HeadFills    []*gorgonia.Node // one per layer (B, H, T, d) when HeadMask, else nil
	HeadOutputs  []*gorgonia.Node // one per layer (B, H, T, d): the head outputs before the head mask
	Params       []*gorgonia.Node // in Model.Params order, bound to the model's own tensors
	Path         layers.Path      // the ops the graph is written with (Model.Config.Attention)

	grads []*gorgonia.Node // d Loss / d Params[i] when Opts.Train
}

// Names of the graph's input nodes; parameters are named as in ParamSpecs.
const (
	TokensName   = "tokens"
	TargetsName  = "targets"
	LossMaskName = "loss_mask"
	KeyMaskName  = "key_mask"
	// PositionsName is the (B*T) Int input holding t for row (b, t), used to
	// look up the position embedding.
	PositionsName = "positions"
	// EmbedName names the token plus position embedding node, LossName the
	// loss node.
	EmbedName = "embed"
	LossName  = "loss"
)

// HeadMaskName and HeadFillName name layer i's head ablation inputs.
func HeadMaskName(layer int) string { return fmt.Sprintf("blocks.%d.attn.head_mask", layer) }
func HeadFillName(layer int) string { return fmt.Sprintf("blocks.%d.attn.head_fill", layer) }

// DropoutMaskName is the name of layer i's attention dropout mask input.
func DropoutMaskName(layer int) string { return fmt.Sprintf("blocks.%d.attn.dropout_mask", layer) }

// Build binds m's weights (by reference) into a new graph for opts. Dropout
// masks and the key mask start as all ones (no dropout, nothing padded); the
// caller overwrites their values (node.Value()) before a run.
func Build(m *Model, opts BuildOptions) (*Graph, error) {
	if err := checkBuild(m, opts); err != nil {
		return nil, err
	}
	cfg := m.Config
	b, t := opts.Batch, opts.SeqLen
	n := b * t
	g := gorgonia.NewGraph()
	path, err := m.Config.Path()
	if err != nil {
		return nil, errors.Wrap(err, "build")
	}
	gr := &Graph{G: g, Model: m, Opts: opts, Path: path}

	gr.Tokens = intInput(g, TokensName, make([]int, n))
	gr.Targets = intInput(g, TargetsName, make([]int, n))
	positions := make([]int, n)
	for i := range positions {
		positions[i] = i % t
	}
	posIDs := intInput(g, PositionsName, positions)
	gr.LossMask = layers.NewParam(g, LossMaskName, newDense(m.Dtype, []int{n}, ones(n)))
	if opts.KeyPadding {
		gr.KeyMask = layers.NewParam(g, KeyMaskName, newDense(m.Dtype, []int{b, t}, ones(n)))
	}
	if opts.HeadMask {
		size := b * cfg.Heads * t * (cfg.DModel / cfg.Heads)
		shape := []int{b, cfg.Heads, t, cfg.DModel / cfg.Heads}
		for i := 0; i < cfg.Layers; i++ {
			gr.HeadMasks = append(gr.HeadMasks, layers.NewParam(g, HeadMaskName(i), newDense(m.Dtype, shape, ones(size))))
			gr.HeadFills = append(gr.HeadFills, layers.NewParam(g, HeadFillName(i), newDense(m.Dtype, shape, make([]float64, size))))
		}
	}
	if opts.Train && cfg.Dropout > 0 {
		h := cfg.Heads
		for i := 0; i < cfg.Layers; i++ {
			mask := newDense(m.Dtype, []int{b, h, t, t}, ones(b*h*t*t))
			gr.DropoutMasks = append(gr.DropoutMasks, layers.NewParam(g, DropoutMaskName(i), mask))
		}
	}
	params := make(map[string]*gorgonia.Node, len(m.Params))
	for _, p := range m.Params {
		node := layers.NewParam(g, p.Name, p.Value)
		gr.Params = append(gr.Params, node)
		params[p.Name] = node
	}

	x, err := gr.forward(params, posIDs)
	if err != nil {
		return nil, err
	}
	head, err := layers.NewLinear(params["lm_head.weight"], params["lm_head.bias"])
	if err != nil {
		return nil, err
	}
	head.Path = gr.Path
	if gr.Logits, err = head.Forward(x); err != nil { // (B*T, V)
		return nil, err
	}
	// This project's op on both paths: Gorgonia's last-axis LogSoftMax is wrong (TestUpstreamLogSoftmaxLastAxisBug).
	if gr.Loss, err = layers.NameAs(LossName)(layers.CrossEntropy(gr.Logits, gr.Targets, gr.LossMask)); err != nil { // scalar
		return nil, err
	}
	if opts.Train {
		if gr.grads, err = gorgonia.Grad(gr.Loss, gr.Params...); err != nil {
			return nil, errors.Wrap(err, "build: gradients")
		}
		// Grad also differentiates each op it passes through with respect
		// to its other inputs (the scalar constants of the gorgonia path's
		// LayerNorm and GELU, the dropout masks). Those nodes feed nothing,
		// but a TapeMachine runs every node of its graph: keep only what the
		// outputs and the gradients need (TestUpstreamGradDifferentiatesConstants).
		roots := append(append(gorgonia.Nodes{gr.Loss, gr.Logits}, gr.Attention...), gr.HeadOutputs...)
		gr.G = g.ExactSubgraphRoots(append(roots, gr.grads...)...)
		if err := nameGradients(gr.G); err != nil {
			return nil, err
		}
	}
	return gr, nil
}

// forward adds the embeddings and blocks and returns the final hidden state
// (B*T, D), after ln_f when the model has one.
func (gr *Graph) forward(params map[string]*gorgonia.Node, posIDs *gorgonia.Node) (*gorgonia.Node, error) {
	cfg := gr.Model.Config
	tokEmb, err := layers.NewEmbedding(params["tok_emb.weight"])
	if err != nil {
		return nil, err
	}
	posEmb, err := layers.NewEmbedding(params["pos_emb.weight"])
	if err != nil {
		return nil, err
	}
	tokEmb.Path, posEmb.Path = gr.Path, gr.Path
	tok, err := tokEmb.Forward(gr.Tokens) // (B*T, D)
	if err != nil {
		return nil, err
	}
	pos, err := posEmb.Forward(posIDs) // (B*T, D)
	if err != nil {
		return nil, err
	}
	x, err := layers.NameAs(EmbedName)(gr.Path.Add(tok, pos)) // (B*T, D)
	if err != nil {
		return nil, errors.Wrap(err, "build: embeddings")
	}
	for i := 0; i < cfg.Layers; i++ {
		block, err := gr.block(params, i)
		if err != nil {
			return nil, errors.Wrapf(err, "build: block %d", i)
		}
		var drop, weights *gorgonia.Node
		if gr.DropoutMasks != nil {
			drop = gr.DropoutMasks[i]
		}
		if x, weights, err = block.Forward(x, gr.KeyMask, drop); err != nil { // (B*T, D), (B, H, T, T)
			return nil, errors.Wrapf(err, "build: block %d", i)
		}
		gr.Attention = append(gr.Attention, weights)
		gr.HeadOutputs = append(gr.HeadOutputs, block.Attn.Context)
	}
	if !cfg.MLP {
		return x, nil
	}
	lnf, err := layers.NewLayerNorm(params["ln_f.weight"], params["ln_f.bias"])
	if err != nil {
		return nil, err
	}
	lnf.Path = gr.Path
	return lnf.Forward(x) // (B*T, D)
}

// block assembles layer i from its named parameters; absent optional biases
// are nil nodes.
func (gr *Graph) block(params map[string]*gorgonia.Node, i int) (*layers.Block, error) {
	cfg := gr.Model.Config
	p := func(name string) *gorgonia.Node { return params[fmt.Sprintf("blocks.%d.%s", i, name)] }
	qkv, err := layers.NewLinear(p("attn.qkv.weight"), p("attn.qkv.bias"))
	if err != nil {
		return nil, err
	}
	out, err := layers.NewLinear(p("attn.out.weight"), p("attn.out.bias"))
	if err != nil {
		return nil, err
	}
	attn, err := layers.NewMultiHeadSelfAttention(gr.Opts.Batch, gr.Opts.SeqLen, cfg.Heads, true, qkv, out)
	if err != nil {
		return nil, err
	}
	if gr.HeadMasks != nil {
		attn.HeadMask, attn.HeadFill = gr.HeadMasks[i], gr.HeadFills[i]
	}
	if !cfg.MLP {
		return newBlock(gr.Path, nil, attn, nil, nil)
	}
	ln1, err := layers.NewLayerNorm(p("ln1.weight"), p("ln1.bias"))
	if err != nil {
		return nil, err
	}
	ln2, err := layers.NewLayerNorm(p("ln2.weight"), p("ln2.bias"))
	if err != nil {
		return nil, err
	}
	fc, err := layers.NewLinear(p("mlp.fc.weight"), p("mlp.fc.bias"))
	if err != nil {
		return nil, err
	}
	proj, err := layers.NewLinear(p("mlp.proj.weight"), p("mlp.proj.bias"))
	if err != nil {
		return nil, err
	}
	mlp, err := layers.NewMLP(fc, proj)
	if err != nil {
		return nil, err
	}
	return newBlock(gr.Path, ln1, attn, ln2, mlp)
}

// newBlock is layers.NewBlock with every layer on path.
func newBlock(path layers.Path, ln1 *layers.LayerNorm, attn *layers.MultiHeadSelfAttention, ln2 *layers.LayerNorm, mlp *layers.MLP) (*layers.Block, error) {
	bl, err := layers.NewBlock(ln1, attn, ln2, mlp)
	if err != nil {
		return nil, err
	}
	bl.SetPath(path)
	return bl, nil
}

// checkBuild validates the model and the options before anything is built.
func checkBuild(m *Model, opts BuildOptions) error {
	if m == nil {
		return errors.New("build: nil model")
	}
	if err := m.Config.Validate(); err != nil {
		return errors.Wrap(err, "build")
	}
	if m.Dtype != tensor.Float32 && m.Dtype != tensor.Float64 {
		return errors.Errorf("build: model dtype %v, want float32 or float64", m.Dtype)
	}
	if opts.Batch <= 0 {
		return errors.Errorf("build: batch %d must be positive", opts.Batch)
	}
	if opts.SeqLen <= 0 || opts.SeqLen > m.Config.Context {
		return errors.Errorf("build: seq len %d must be in [1, context %d]", opts.SeqLen, m.Config.Context)
	}
	specs := m.Config.ParamSpecs()
	if len(m.Params) != len(specs) {
		return errors.Errorf("build: model has %d tensors, its config needs %d", len(m.Params), len(specs))
	}
	for i, spec := range specs {
		p := m.Params[i]
		if p.Name != spec.Name {
			return errors.Errorf("build: tensor %d is %q, want %q", i, p.Name, spec.Name)
		}
		if p.Value == nil {
			return errors.Errorf("build: tensor %q is nil", p.Name)
		}
		if !p.Value.Shape().Eq(tensor.Shape(spec.Shape)) || p.Value.Dtype() != m.Dtype {
			return errors.Errorf("build: tensor %q is %v %v, want %v %v", p.Name, p.Value.Dtype(), p.Value.Shape(), m.Dtype, spec.Shape)
		}
		if p.Value.IsView() || !p.Value.DataOrder().IsRowMajor() {
			return errors.Errorf("build: tensor %q is a view; bind a contiguous tensor so updates reach the graph", p.Name)
		}
	}
	return nil
}

// Feed copies one batch into the graph's input tensors. tokens and targets
// are (B*T) ids in row-major (b, t) order, each in [0, Vocab); lossMask is
// (B*T). Nothing is copied when any check fails.
func (gr *Graph) Feed(tokens, targets []int, lossMask []float64) error {
	n, v := gr.Opts.Batch*gr.Opts.SeqLen, gr.Model.Config.Vocab
	for _, in := range []struct {
		name string
		len  int
	}{{"tokens", len(tokens)}, {"targets", len(targets)}, {"loss mask", len(lossMask)}} {
		if in.len != n {
			return errors.Errorf("feed: %d %s, want B*T = %d*%d = %d", in.len, in.name, gr.Opts.Batch, gr.Opts.SeqLen, n)
		}
	}
	for _, ids := range []struct {
		name string
		ids  []int
	}{{"token", tokens}, {"target", targets}} {
		for i, id := range ids.ids {
			if id < 0 || id >= v {
				return errors.Errorf("feed: %s id %d at position %d (batch %d, t %d) is outside the vocabulary [0, %d)",
					ids.name, id, i, i/gr.Opts.SeqLen, i%gr.Opts.SeqLen, v)
			}
		}
	}
	copy(gr.Tokens.Value().Data().([]int), tokens)
	copy(gr.Targets.Value().Data().([]int), targets)
	switch mask := gr.LossMask.Value().Data().(type) {
	case []float64:
		copy(mask, lossMask)
	case []float32:
		for i, x := range lossMask {
			mask[i] = float32(x)
		}
	}
	return nil
}

// NewMachine returns a TapeMachine for the graph. On a Train graph the
// parameters' dual values are bound, so gorgonia's own solvers work; note
// that the machine ADDS each run's gradient into those dual values
// (Params[i].Grad() accumulates until a solver zeroes it), whereas Gradients
// returns the last run's gradient alone. The machine keeps its own copies of
// Logits, Loss and Attention (and HeadOutputs on a HeadMask graph) after each run (TraceExec on those nodes only),
// so a later op reusing their buffers cannot change what callers read.
func (gr *Graph) NewMachine() gorgonia.VM { return gr.newMachine(true) }

// NewLeanMachine is NewMachine for callers that read only Logits, Loss and
// the gradients (training, evaluation): it keeps no copies of the attention
// weights, which cost a copy of every layer's (B, H, T, T) per run (at
// B16 T64 H8 L4, 8 MB and 8% of a training step's CPU time).
func (gr *Graph) NewLeanMachine() gorgonia.VM { return gr.newMachine(false) }

func (gr *Graph) newMachine(keepAttention bool) gorgonia.VM {
	watch := []interface{}{gr.Logits, gr.Loss}
	if keepAttention {
		for _, a := range gr.Attention {
			watch = append(watch, a)
		}
	}
	if gr.HeadMasks != nil {
		for _, y := range gr.HeadOutputs {
			watch = append(watch, y)
		}
	}
	opts := []gorgonia.VMOpt{gorgonia.TraceExec(), gorgonia.WithWatchlist(watch...)}
	if gr.Opts.Train {
		opts = append(opts, gorgonia.BindDualValues(gr.Params...))
	}
	return gorgonia.NewTapeMachine(gr.G, opts...)
}

// Gradients returns d Loss / d Params[i] of the last run alone (never
// accumulated), in Params order. The tensors belong to the machine: read them
// before the next run and do not modify them.
func (gr *Graph) Gradients() ([]*tensor.Dense, error) {
	if !gr.Opts.Train {
		return nil, errors.New("gradients: the graph was built without Train")
	}
	out := make([]*tensor.Dense, len(gr.grads))
	for i, n := range gr.grads {
		d, ok := n.Value().(*tensor.Dense)
		if !ok {
			return nil, errors.Errorf("gradients: no gradient for %s yet (run the machine first)", gr.Model.Params[i].Name)
		}
		if !d.Shape().Eq(gr.Model.Params[i].Value.Shape()) {
			return nil, errors.Errorf("gradients: %s gradient has shape %v, want %v", gr.Model.Params[i].Name, d.Shape(), gr.Model.Params[i].Value.Shape())
		}
		out[i] = d
	}
	return out, nil
}

func intInput(g *gorgonia.ExprGraph, name string, ids []int) *gorgonia.Node {
	return gorgonia.NewVector(g, tensor.Int, gorgonia.WithShape(len(ids)), gorgonia.WithName(name),
		gorgonia.WithValue(tensor.New(tensor.WithShape(len(ids)), tensor.WithBacking(ids))))
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
