package model

import (
	"fmt"
	"math"

	"github.com/attnscope/attnscope/internal/engine"
	"github.com/attnscope/attnscope/internal/raise"
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
	// Cache names the activations the machine keeps readable after a run
	// (Graph.Activation), Hooks those a caller's function may read and
	// replace (Graph.SetHook, Graph.Hook): each name the lab's
	// (blocks.5.attn.weights), TransformerLens's
	// (blocks.5.attn.hook_pattern) or a glob of either
	// (blocks.*.attn.weights); see Config.Activations. Build resolves them
	// into lab names. The activations a plain forward of the fused path
	// does not compute (ActivationSpec.OnDemand) are built only when named.
	Cache []string
	Hooks []string
	// Grads names the activations (as Cache names them) whose gradient a
	// run computes, d metric / d activation (Graph.ActivationGrad): the
	// metric is Loss, or with MetricWeights Σ Logits ⊙ w for the (B*T, V)
	// weights w fed with Graph.SetMetricWeights (a logit difference). Not
	// with Train, nor over weights kept in their file's dtype.
	Grads         []string
	MetricWeights bool
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
	DropoutMasks []*gorgonia.Node // one per layer (B, H, T, T) when Train && Dropout > 0, else nil
	KeyMask      *gorgonia.Node   // (B, T) when KeyPadding, else nil
	Params       []*gorgonia.Node // in Model.Params order, bound to the model's own tensors
	Path         layers.Path      // the ops the graph is written with (Model.Config.Attention)
	// Activations are the graph's named nodes (see ResidPre): what a run
	// can keep (Opts.Cache) or intervene on (Opts.Hooks).
	Activations map[string]*gorgonia.Node
	// MetricWeights is the (B*T, V) input of Opts.MetricWeights, else nil.
	MetricWeights *gorgonia.Node

	specs []ActivationSpec // every activation the graph has (Config.Activations)
	hooks map[string]*hook // by activation name, for Opts.Hooks
	grads []*gorgonia.Node // d Loss / d Params[i] when Opts.Train
	// actGrads are d metric / d activation for Opts.Grads, by lab name.
	actGrads map[string]*gorgonia.Node
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
	// SinusoidalName is the constant input holding the sinusoidal position
	// table (model.position sinusoidal).
	SinusoidalName = "pos_sinusoidal"
	// EmbedName names the token plus position embedding node, LossName the
	// loss node.
	EmbedName = "embed"
	LossName  = "loss"
)

// DropoutMaskName is the name of layer i's attention dropout mask input.
func DropoutMaskName(layer int) string { return fmt.Sprintf("blocks.%d.attn.dropout_mask", layer) }

// Build binds m's weights (by reference) into a new graph for opts. Dropout
// masks and the key mask start as all ones (no dropout, nothing padded); the
// caller overwrites their values (node.Value()) before a run.
//
//	Tokens, Targets  (B*T)        Int ids, row-major (b, t)
//	LossMask         (B*T)        1 where the position is scored
//	KeyMask          (B, T)       with KeyPadding: 0 hides a padded key
//	Logits           (B*T, V)     lm_head(ln_f(blocks(tok_emb + pos_emb))),
//	                              lm_head's weight tok_emb's when tied
//	Loss             scalar       mean cross-entropy over scored positions
//	Activations      named nodes: the residual stream, each layer's
//	                 attention weights (before dropout) and head outputs
func Build(m *Model, opts BuildOptions) (gr *Graph, err error) {
	if err := checkBuild(m, opts); err != nil {
		return nil, err
	}
	path, err := m.Config.Path()
	if err != nil {
		return nil, errors.Wrap(err, "build")
	}
	gr = &Graph{Model: m, Opts: opts, Path: path, Activations: map[string]*gorgonia.Node{}}
	if err := gr.resolveNames(); err != nil {
		return nil, err
	}
	defer raise.Catch(&err)
	gr.G = gorgonia.NewGraph()
	params, posIDs := gr.inputs()
	x := gr.forward(params, posIDs)                                                                // (B*T, D)
	gr.Logits = gr.point(LogitsActivation, gr.capLogits(raise.Must(gr.lmHead(params).Forward(x)))) // (B*T, V)
	raise.If(gr.checkBuilt())
	// This project's op on both paths: Gorgonia's last-axis LogSoftMax is wrong (TestUpstreamLogSoftmaxLastAxisBug).
	gr.Loss = node(LossName)(layers.CrossEntropy(gr.Logits, gr.Targets, gr.LossMask)) // scalar
	if opts.Train {
		gr.gradients()
	}
	if len(opts.Grads) > 0 {
		gr.activationGradients()
	}
	return gr, nil
}

// inputs adds the graph's inputs: tokens, targets, loss mask, the optional
// masks, the position ids and the parameters (returned by name).
func (gr *Graph) inputs() (params map[string]*gorgonia.Node, posIDs *gorgonia.Node) {
	g, m, cfg := gr.G, gr.Model, gr.Model.Config
	b, t := gr.Opts.Batch, gr.Opts.SeqLen
	n := b * t
	gr.Tokens = intInput(g, TokensName, make([]int, n))
	gr.Targets = intInput(g, TargetsName, make([]int, n))
	positions := make([]int, n)
	for i := range positions {
		positions[i] = i % t
	}
	posIDs = intInput(g, PositionsName, positions)
	gr.LossMask = layers.NewParam(g, LossMaskName, newDense(m.Dtype, []int{n}, ones(n)))
	if gr.Opts.KeyPadding {
		gr.KeyMask = layers.NewParam(g, KeyMaskName, newDense(m.Dtype, []int{b, t}, ones(n)))
	}
	if gr.Opts.Train && cfg.Dropout > 0 {
		h := cfg.Heads
		for i := 0; i < cfg.Layers; i++ {
			mask := newDense(m.Dtype, []int{b, h, t, t}, ones(b*h*t*t))
			gr.DropoutMasks = append(gr.DropoutMasks, layers.NewParam(g, DropoutMaskName(i), mask))
		}
	}
	params = make(map[string]*gorgonia.Node, len(m.Params))
	for _, p := range m.Params {
		param := paramNode(g, p)
		gr.Params = append(gr.Params, param)
		params[p.Name] = param
	}
	return params, posIDs
}

// gradients adds d Loss / d Params and keeps only the part of the graph the
// outputs and the gradients need.
func (gr *Graph) gradients() {
	gr.grads = raise.Must(gorgonia.Grad(gr.Loss, gr.Params...))
	// Grad also differentiates each op it passes through with respect
	// to its other inputs (the scalar constants of the gorgonia path's
	// LayerNorm and GELU, the dropout masks). Those nodes feed nothing,
	// but a TapeMachine runs every node of its graph: keep only what the
	// outputs and the gradients need (TestUpstreamGradDifferentiatesConstants).
	roots := append(gorgonia.Nodes{gr.Loss, gr.Logits}, gr.cached()...)
	gr.G = gr.G.ExactSubgraphRoots(append(roots, gr.grads...)...)
	raise.If(nameGradients(gr.G))
}

// forward adds the embeddings and blocks and returns the final hidden state
// (B*T, D), after ln_f when the model has one.
func (gr *Graph) forward(params map[string]*gorgonia.Node, posIDs *gorgonia.Node) *gorgonia.Node {
	cfg := gr.Model.Config
	tok := gr.point(TokEmbActivation, raise.Must(gr.embedding(params["tok_emb.weight"]).Forward(gr.Tokens))) // (B*T, D)
	x := gr.scaleEmbedding(tok)                                                                              // (B*T, D)
	if table := gr.positionTable(params); table != nil {
		pos := gr.point(PosEmbActivation, raise.Must(gr.embedding(table).Forward(posIDs))) // (B*T, D)
		x = node(EmbedName)(gr.Path.Add(x, pos))                                           // (B*T, D)
	}
	for i := 0; i < cfg.Layers; i++ {
		x = gr.point(ResidPre(i), x) // (B*T, D)
		in := layers.AttentionInputs{KeyMask: gr.KeyMask}
		if gr.DropoutMasks != nil {
			in.Dropout = gr.DropoutMasks[i]
		}
		block, err := gr.block(params, i).Forward(x, in)
		raise.If(errors.Wrapf(err, "build: block %d", i))
		x = gr.point(ResidPost(i), block.Out) // (B*T, D)
	}
	if !cfg.MLP {
		return x
	}
	return raise.Must(gr.norm(params, "ln_f").Forward(x)) // (B*T, D)
}

// block assembles layer i from its named parameters, every part on the
// graph's path.
func (gr *Graph) block(params map[string]*gorgonia.Node, i int) *layers.Block {
	p := fmt.Sprintf("blocks.%d.", i)
	cfg := gr.Model.Config
	var attn *layers.MultiHeadSelfAttention
	if cfg.KVLatent > 0 {
		latent := layers.Latent{Q: gr.linear(params, p+"attn.q"), Down: gr.linear(params, p+"attn.kv_down"), Up: gr.linear(params, p+"attn.kv_up")}
		attn = raise.Must(layers.NewLatentAttention(gr.Opts.Batch, gr.Opts.SeqLen, cfg.Heads, latent, gr.linear(params, p+"attn.out"), cfg.AttentionOptions(gr.Path, i)))
	} else {
		opts := cfg.AttentionOptions(gr.Path, i)
		if opts.QKNorm != nil {
			opts.QKNorm.Q, opts.QKNorm.K = params[p+"attn.q_norm.weight"], params[p+"attn.k_norm.weight"]
		}
		attn = raise.Must(layers.NewMultiHeadSelfAttention(gr.Opts.Batch, gr.Opts.SeqLen, cfg.Heads,
			gr.linear(params, p+"attn.qkv"), gr.linear(params, p+"attn.out"), opts))
	}
	attn.Tap = gr.tap()
	attn.ResultWeight = gr.resultWeight(i)
	if !gr.Model.Config.MLP {
		bl := raise.Must(layers.NewBlock(nil, attn, nil, nil))
		bl.Tap = gr.tap()
		return bl
	}
	bl := &layers.Block{Attn: attn, MLP: gr.mlp(params, p+"mlp"), Parallel: cfg.ParallelResidual, Tap: gr.tap()}
	if cfg.PreNorms() {
		bl.LN1, bl.LN2 = gr.norm(params, p+"ln1"), gr.norm(params, p+"ln2")
	}
	if cfg.PostNorms() {
		bl.LN1Post, bl.LN2Post = gr.norm(params, p+"ln1_post"), gr.norm(params, p+"ln2_post")
	}
	return raise.Must(layers.NewFullBlock(bl))
}

// linear, layerNorm and embedding make the layer whose parameters are
// name.weight (and name.bias when the model has it), on the graph's path.
func (gr *Graph) linear(params map[string]*gorgonia.Node, name string) *layers.Linear {
	l := raise.Must(layers.NewLinear(params[name+".weight"], params[name+".bias"]))
	l.Path, l.Stored = gr.Path, gr.Model.Stored(name+".weight")
	return l
}

// lmHead is the LM head on the graph's path: lm_head.weight, or with
// tie_embeddings tok_emb.weight (the same node the embedding reads, so its
// gradient is the sum of both uses), and lm_head.bias when the model has
// it. Its nodes are named lm_head either way.
func (gr *Graph) lmHead(params map[string]*gorgonia.Node) *layers.Linear {
	if !gr.Model.Config.TieEmbeddings {
		return gr.linear(params, "lm_head")
	}
	l := raise.Must(layers.NewLinear(params["tok_emb.weight"], params["lm_head.bias"]))
	l.Path, l.Name, l.Stored = gr.Path, "lm_head", gr.Model.Stored("tok_emb.weight")
	return l
}

// norm is the config's norm named name (ln1, ln2, their post norms,
// ln_f), at the config's epsilon, on the graph's path: an RMSNorm (by 1 +
// w with norm_offset), or a LayerNorm whose bias is nil when the config
// has none.
func (gr *Graph) norm(params map[string]*gorgonia.Node, name string) layers.Norm {
	w, eps := params[name+".weight"], gr.Model.Config.Eps()
	if gr.Model.Config.NormKind() == NormRMS {
		l := raise.Must(layers.NewRMSNorm(w))
		l.Eps, l.Path, l.Offset, l.Tap = eps, gr.Path, gr.Model.Config.NormScaleOffset(), gr.tap()
		return l
	}
	l := raise.Must(layers.NewLayerNorm(w, params[name+".bias"]))
	l.Eps, l.Path, l.Tap = eps, gr.Path, gr.tap()
	return l
}

// mlp is the config's MLP whose parameters are under name, on the graph's
// path: SwiGLU's or GeGLU's gate, up and down, or fc and proj around the activation
// (layers.Activation spells the other kinds as the config does).
func (gr *Graph) mlp(params map[string]*gorgonia.Node, name string) layers.FeedForward {
	var mlp layers.FeedForward
	switch kind := gr.Model.Config.ActivationKind(); kind {
	case ActivationSwiGLU:
		s := raise.Must(layers.NewSwiGLU(gr.linear(params, name+".gate"), gr.linear(params, name+".up"), gr.linear(params, name+".down")))
		s.Tap, mlp = gr.tap(), s
	case ActivationGeGLU:
		s := raise.Must(layers.NewGeGLU(gr.linear(params, name+".gate"), gr.linear(params, name+".up"), gr.linear(params, name+".down")))
		s.Tap, mlp = gr.tap(), s
	default:
		s := raise.Must(layers.NewMLP(gr.linear(params, name+".fc"), gr.linear(params, name+".proj"), layers.Activation(kind)))
		s.Tap, mlp = gr.tap(), s
	}
	mlp.SetPath(gr.Path)
	return mlp
}

func (gr *Graph) embedding(table *gorgonia.Node) *layers.Embedding {
	e := raise.Must(layers.NewEmbedding(table))
	e.Path, e.Stored = gr.Path, gr.Model.Stored(table.Name())
	return e
}

// positionTable is the table of position vectors added to the token
// embeddings: the learned pos_emb, the fixed sinusoidal table (a named
// constant of the graph's T rows), or nil for positions inside the
// attention (rope, alibi) or none.
func (gr *Graph) positionTable(params map[string]*gorgonia.Node) *gorgonia.Node {
	switch gr.Model.Config.PositionKind() {
	case PositionLearned:
		return params["pos_emb.weight"]
	case PositionSinusoidal:
		t, d := gr.Opts.SeqLen, gr.Model.Config.DModel
		table := newDense(gr.Model.Dtype, []int{t, d}, Sinusoidal(t, d))
		return layers.NewParam(gr.G, SinusoidalName, table)
	}
	return nil
}

// Sinusoidal is Vaswani et al.'s position table (T, D), row-major: row t
// holds sin(t / 10000^(2i/D)) in column 2i and cos of the same in 2i+1.
func Sinusoidal(t, d int) []float64 {
	v := make([]float64, t*d)
	for p := 0; p < t; p++ {
		for i := 0; i < d/2; i++ {
			angle := float64(p) / math.Pow(10000, 2*float64(i)/float64(d))
			v[p*d+2*i], v[p*d+2*i+1] = math.Sin(angle), math.Cos(angle)
		}
	}
	return v
}

// node names the node a graph-building call returned, or raises its error.
func node(name string) func(*gorgonia.Node, error) *gorgonia.Node {
	return func(n *gorgonia.Node, err error) *gorgonia.Node { return raise.Must(layers.NameAs(name)(n, err)) }
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
	if limit := m.Config.MaxLength(); opts.SeqLen <= 0 || limit > 0 && opts.SeqLen > limit {
		return errors.Errorf("build: seq len %d must be in [1, context %d]", opts.SeqLen, limit)
	}
	if err := checkGrads(m, opts); err != nil {
		return err
	}
	specs := m.Config.ParamSpecs()
	if len(m.Params) != len(specs) {
		return errors.Errorf("build: model has %d tensors, its config needs %d", len(m.Params), len(specs))
	}
	path, _ := m.Config.Path() // Validate checked it
	for i, spec := range specs {
		p := m.Params[i]
		if p.Name != spec.Name {
			return errors.Errorf("build: tensor %d is %q, want %q", i, p.Name, spec.Name)
		}
		if p.Stored != nil {
			if err := checkStored(m, p, spec, path, opts.Train); err != nil {
				return err
			}
			continue
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
	if err := checkFeed(gr.Model.Config.Vocab, gr.Opts.Batch, gr.Opts.SeqLen, tokens, targets, lossMask); err != nil {
		return err
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

// checkFeed checks one batch of b rows of t positions for a vocabulary of
// v ids: the lengths, and every id in range.
func checkFeed(v, b, t int, tokens, targets []int, lossMask []float64) error {
	n := b * t
	for _, in := range []struct {
		name string
		len  int
	}{{"tokens", len(tokens)}, {"targets", len(targets)}, {"loss mask", len(lossMask)}} {
		if in.len != n {
			return errors.Errorf("feed: %d %s, want B*T = %d*%d = %d", in.len, in.name, b, t, n)
		}
	}
	for _, ids := range []struct {
		name string
		ids  []int
	}{{"token", tokens}, {"target", targets}} {
		for i, id := range ids.ids {
			if id < 0 || id >= v {
				return errors.Errorf("feed: %s id %d at position %d (batch %d, t %d) is outside the vocabulary [0, %d)",
					ids.name, id, i, i/t, i%t, v)
			}
		}
	}
	return nil
}

// NewMachine returns a TapeMachine for the graph. On a Train graph the
// parameters' dual values are bound, so gorgonia's own solvers work; note
// that the machine ADDS each run's gradient into those dual values
// (Params[i].Grad() accumulates until a solver zeroes it), whereas Gradients
// returns the last run's gradient alone. The machine keeps its own copies of
// Logits, Loss and the cached activations (Opts.Cache) after each run
// (TraceExec on those nodes only), so a later op reusing their buffers cannot
// change what callers read.
func (gr *Graph) NewMachine() gorgonia.VM {
	watch := []interface{}{gr.Logits, gr.Loss}
	for _, n := range append(gr.cached(), gr.gradNodes()...) {
		watch = append(watch, n)
	}
	opts := []gorgonia.VMOpt{gorgonia.TraceExec(), gorgonia.WithWatchlist(watch...)}
	if gr.Opts.Train {
		opts = append(opts, gorgonia.BindDualValues(gr.Params...))
	}
	return gorgonia.NewTapeMachine(gr.G, opts...)
}

// NewLeanMachine is the machine for callers that read Logits, Loss, the
// gradients (Gradients) and the cached activations (training, evaluation,
// generation, ablation): this project's machine (engine.Machine, see
// lean.go), which runs the program a TapeMachine would but reuses every op's
// output from run to run, and binds those nodes to its values instead of
// copying them. It binds no dual values. What it leaves belongs to it and
// stays valid until its next run.
func (gr *Graph) NewLeanMachine() gorgonia.VM {
	return leanMachine(engine.NewMachine, gr.G, gr.outputs()...)
}

// NewOneShotMachine is NewLeanMachine for a graph that runs once (an
// inspection's forward): it lets go of every value but those NewLeanMachine
// binds as soon as the run no longer reads it (engine.NewOneShotMachine),
// so a long sequence's forward holds its activations one layer at a time
// rather than all at once, and a training step each activation only until
// the backward pass last reads it. Run again, it writes into the memory it
// let go of in the run before (train.Replicas' steps). Evaluation and
// decoding, whose graphs are small beside the weights, keep
// NewLeanMachine's reuse of every value.
func (gr *Graph) NewOneShotMachine() gorgonia.VM {
	return leanMachine(engine.NewOneShotMachine, gr.G, gr.outputs()...)
}

// outputs are the nodes callers read after a run: Logits, Loss, the
// gradients and the cached activations.
func (gr *Graph) outputs() gorgonia.Nodes {
	return append(append(append(gorgonia.Nodes{gr.Logits, gr.Loss}, gr.grads...), gr.cached()...), gr.gradNodes()...)
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
