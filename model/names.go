package model

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
)

// The activations' name table: every activation a graph of a config has,
// under the lab's name (what Graph.Activations is keyed by) and
// TransformerLens's (HookedTransformer's hook names), with its shape in
// the graph and in TransformerLens (batch first). Everything that takes
// an activation's name (BuildOptions.Cache and Hooks, Graph.Activation,
// Graph.SetHook) takes either name or a glob of either (path.Match:
// "blocks.*.attn.weights", "blocks.*.hook_resid_post"), resolved by
// ResolveActivations.

// Axis is one axis of an activation: TransformerLens's word for it
// ("batch", "pos", "head_index", "d_head", ...) and its size.
type Axis struct {
	Name string
	Size int
}

// ActivationSpec describes one activation of a graph.
//
//	Name      the lab's name: "blocks.0.attn.q"
//	TL        TransformerLens's: "blocks.0.attn.hook_q"
//	Shape     the graph node's shape: (B*T, D) for a row of the stream
//	Axes      the graph node's axes in its row-major order, split where
//	          the node is flat: Shape holds their sizes, merged
//	TLAxes    the axes' names in TransformerLens's order (TLShape)
//	OnDemand  the fused path builds it only when a graph asks for it
//	          (cached or hooked); a plain forward does not compute it
type ActivationSpec struct {
	Name, TL string
	Shape    tensor.Shape
	Axes     []Axis
	TLAxes   []string
	OnDemand bool
}

// TLShape is the activation's shape in TransformerLens, batch first.
func (s ActivationSpec) TLShape() tensor.Shape {
	out := make(tensor.Shape, len(s.TLAxes))
	for i, name := range s.TLAxes {
		out[i] = s.Axes[s.axis(name)].Size
	}
	return out
}

// axis is the position of the axis called name among Axes.
func (s ActivationSpec) axis(name string) int {
	return slices.IndexFunc(s.Axes, func(a Axis) bool { return a.Name == name })
}

// ToTL returns a copy of x, the activation's value in the graph's layout,
// in TransformerLens's layout (TLShape): its axes split and permuted.
func (s ActivationSpec) ToTL(x *tensor.Dense) (*tensor.Dense, error) {
	if !x.Shape().Eq(s.Shape) {
		return nil, errors.Errorf("activation %s: value of shape %v, want %v", s.Name, x.Shape(), s.Shape)
	}
	split := make(tensor.Shape, len(s.Axes))
	perm := make([]int, len(s.TLAxes))
	for i, a := range s.Axes {
		split[i] = a.Size
	}
	for i, name := range s.TLAxes {
		perm[i] = s.axis(name)
	}
	c := x.Clone().(*tensor.Dense)
	if err := c.Reshape(split...); err != nil {
		return nil, errors.Wrapf(err, "activation %s", s.Name)
	}
	if slices.IsSorted(perm) {
		return c, nil
	}
	if err := c.T(perm...); err != nil {
		return nil, errors.Wrapf(err, "activation %s", s.Name)
	}
	return c, errors.Wrapf(c.Transpose(), "activation %s", s.Name)
}

// Lab names of the activations beyond resid_pre, attn.weights, head_out
// and resid_post (activations.go); N is the block.
const (
	TokEmbActivation = "tok_emb" // the token embedding rows, before embed_scale
	PosEmbActivation = "pos_emb" // the position embedding rows (learned or sinusoidal)
)

func ResidMid(l int) string   { return fmt.Sprintf("blocks.%d.resid_mid", l) }
func AttnQ(l int) string      { return fmt.Sprintf("blocks.%d.attn.q", l) }
func AttnQIn(l int) string    { return fmt.Sprintf("blocks.%d.attn.q_in", l) }
func AttnKIn(l int) string    { return fmt.Sprintf("blocks.%d.attn.k_in", l) }
func AttnK(l int) string      { return fmt.Sprintf("blocks.%d.attn.k", l) }
func AttnV(l int) string      { return fmt.Sprintf("blocks.%d.attn.v", l) }
func AttnScores(l int) string { return fmt.Sprintf("blocks.%d.attn.scores", l) }
func AttnResult(l int) string { return fmt.Sprintf("blocks.%d.attn.result", l) }
func AttnOut(l int) string    { return fmt.Sprintf("blocks.%d.attn_out", l) }
func MLPPre(l int) string     { return fmt.Sprintf("blocks.%d.mlp.pre", l) }
func MLPPreLinear(l int) string {
	return fmt.Sprintf("blocks.%d.mlp.pre_linear", l)
}
func MLPPost(l int) string { return fmt.Sprintf("blocks.%d.mlp.post", l) }
func MLPOut(l int) string  { return fmt.Sprintf("blocks.%d.mlp_out", l) }

// NormScale and NormNormalized name a norm's activations: norm is its
// parameters' prefix ("blocks.0.ln1", "blocks.0.ln2_post", "ln_f").
func NormScale(norm string) string      { return norm + ".scale" }
func NormNormalized(norm string) string { return norm + ".normalized" }

// tlNorm is TransformerLens's name of the norm called norm here.
func tlNorm(norm string) string {
	if norm == "ln_f" {
		return "ln_final"
	}
	return norm
}

// Activations lists every activation a graph of batch rows of seqLen
// positions has, in build order.
func (c Config) Activations(batch, seqLen int) []ActivationSpec {
	d := Axis{"d_model", c.DModel}
	row := func(name, tl string, width Axis) ActivationSpec { return rowSpec(name, tl, batch, seqLen, width) }
	specs := []ActivationSpec{row(TokEmbActivation, "hook_embed", d)}
	if k := c.PositionKind(); k == PositionLearned || k == PositionSinusoidal {
		specs = append(specs, row(PosEmbActivation, "hook_pos_embed", d))
	}
	for l := range c.Layers {
		specs = append(specs, c.blockActivations(l, batch, seqLen)...)
	}
	if c.MLP {
		specs = append(specs, c.normActivations("ln_f", batch, seqLen)...)
	}
	return append(specs, row(LogitsActivation, "logits", Axis{"d_vocab", c.Vocab}))
}

// rowSpec is the spec of an activation with one row of width per token:
// (B*T, width) in the graph, (B, T, width) in TransformerLens.
func rowSpec(name, tl string, batch, seqLen int, width Axis) ActivationSpec {
	return ActivationSpec{Name: name, TL: tl, Shape: tensor.Shape{batch * seqLen, width.Size},
		Axes: []Axis{{"batch", batch}, {"pos", seqLen}, width}, TLAxes: []string{"batch", "pos", width.Name}}
}

// blockActivations are block l's activations, in build order.
func (c Config) blockActivations(l, batch, seqLen int) []ActivationSpec {
	d, p := Axis{"d_model", c.DModel}, fmt.Sprintf("blocks.%d.", l)
	row := func(name, tl string, width Axis) ActivationSpec { return rowSpec(name, p+tl, batch, seqLen, width) }
	specs := []ActivationSpec{row(ResidPre(l), "hook_resid_pre", d)}
	if c.PreNorms() {
		specs = append(specs, c.normActivations(p+"ln1", batch, seqLen)...)
	}
	specs = append(specs, c.attentionActivations(l, batch, seqLen)...)
	if c.PostNorms() {
		specs = append(specs, c.normActivations(p+"ln1_post", batch, seqLen)...)
	}
	specs = append(specs, row(AttnOut(l), "hook_attn_out", d))
	if !c.MLP {
		return append(specs, row(ResidPost(l), "hook_resid_post", d))
	}
	if !c.ParallelResidual {
		specs = append(specs, row(ResidMid(l), "hook_resid_mid", d))
	}
	if c.PreNorms() {
		specs = append(specs, c.normActivations(p+"ln2", batch, seqLen)...)
	}
	f := Axis{"d_mlp", c.DFF}
	specs = append(specs, row(MLPPre(l), "mlp.hook_pre", f))
	if c.Gated() {
		specs = append(specs, row(MLPPreLinear(l), "mlp.hook_pre_linear", f))
	}
	specs = append(specs, row(MLPPost(l), "mlp.hook_post", f))
	if c.PostNorms() {
		specs = append(specs, c.normActivations(p+"ln2_post", batch, seqLen)...)
	}
	return append(specs, row(MLPOut(l), "hook_mlp_out", d), row(ResidPost(l), "hook_resid_post", d))
}

// attentionActivations are block l's attention's, in build order. q, k
// and v are the Gorgonia path's nodes (the fused path builds a layer
// asking for them on that path): (B, H, T, d) each, or with kv_heads < H
// q (H, B, T, d) and k, v (G, B, T, d) (TransformerLens keeps k and v at
// the kv heads too). q and k are those the scores read, after rotary
// positions: with rope, TransformerLens's hook_rot_q and hook_rot_k, its
// hook_q and hook_k being q_in and k_in, before the rotation (after
// QK-norm).
func (c Config) attentionActivations(l, batch, seqLen int) []ActivationSpec {
	b, h, dh := Axis{"batch", batch}, Axis{"head_index", c.Heads}, Axis{"d_head", c.DHead()}
	t, q, k := Axis{"pos", seqLen}, Axis{"query_pos", seqLen}, Axis{"key_pos", seqLen}
	p := fmt.Sprintf("blocks.%d.attn.", l)
	spec := func(name, tl string, onDemand bool, tlAxes []string, axes ...Axis) ActivationSpec {
		shape := make(tensor.Shape, len(axes))
		for i, a := range axes {
			shape[i] = a.Size
		}
		return ActivationSpec{Name: name, TL: p + tl, Shape: shape, Axes: axes, TLAxes: tlAxes, OnDemand: onDemand}
	}
	headsTL := []string{"batch", "pos", "head_index", "d_head"}
	kvTL := headsTL
	qAxes, kvAxes := []Axis{b, h, t, dh}, []Axis{b, h, t, dh}
	if g := c.KVHeadCount(); g != c.Heads {
		kv := Axis{"kv_head_index", g}
		qAxes, kvAxes = []Axis{h, b, t, dh}, []Axis{kv, b, t, dh}
		kvTL = []string{"batch", "pos", "kv_head_index", "d_head"}
	}
	squares := []string{"batch", "head_index", "query_pos", "key_pos"}
	var qk []ActivationSpec
	if c.PositionKind() == PositionRope {
		qk = []ActivationSpec{
			spec(AttnQIn(l), "hook_q", true, headsTL, qAxes...),
			spec(AttnKIn(l), "hook_k", true, kvTL, kvAxes...),
			spec(AttnQ(l), "hook_rot_q", true, headsTL, qAxes...),
			spec(AttnK(l), "hook_rot_k", true, kvTL, kvAxes...),
		}
	} else {
		qk = []ActivationSpec{
			spec(AttnQ(l), "hook_q", true, headsTL, qAxes...),
			spec(AttnK(l), "hook_k", true, kvTL, kvAxes...),
		}
	}
	return append(qk, []ActivationSpec{
		spec(AttnV(l), "hook_v", true, kvTL, kvAxes...),
		spec(AttnScores(l), "hook_attn_scores", true, squares, b, h, q, k),
		spec(AttnWeights(l), "hook_pattern", false, squares, b, h, q, k),
		spec(HeadOut(l), "hook_z", false, headsTL, b, h, t, dh),
		spec(AttnResult(l), "hook_result", true, []string{"batch", "pos", "head_index", "d_model"},
			h, Axis{"batch", batch}, t, Axis{"d_model", c.DModel}),
	}...)
}

// normActivations are the norm's scale and normalized rows. The scale is
// TransformerLens's hook_scale, sqrt(mean + eps) per row ((B*T) here,
// (B, T, 1) there); normalized is its hook_normalized: a LayerNorm's
// output, an RMSNorm's x / scale before its weight. Only a LayerNorm's
// output is there in a plain forward of the fused path.
func (c Config) normActivations(norm string, batch, seqLen int) []ActivationSpec {
	b, t := Axis{"batch", batch}, Axis{"pos", seqLen}
	tl := tlNorm(norm)
	return []ActivationSpec{
		{Name: NormScale(norm), TL: tl + ".hook_scale", Shape: tensor.Shape{batch * seqLen},
			Axes: []Axis{b, t, {"1", 1}}, TLAxes: []string{"batch", "pos", "1"}, OnDemand: true},
		{Name: NormNormalized(norm), TL: tl + ".hook_normalized", Shape: tensor.Shape{batch * seqLen, c.DModel},
			Axes: []Axis{b, t, {"d_model", c.DModel}}, TLAxes: []string{"batch", "pos", "d_model"},
			OnDemand: c.NormKind() == NormRMS},
	}
}

// ResolveActivations turns the names asked (each the lab's name,
// TransformerLens's, or a glob of either) into lab names, each once, in
// build order. A name or glob that names nothing among specs is refused
// with the names there are.
func ResolveActivations(specs []ActivationSpec, asked []string) ([]string, error) {
	want := make([]bool, len(specs))
	for _, a := range asked {
		found := false
		for i, s := range specs {
			ok, err := matchActivation(a, s)
			if err != nil {
				return nil, err
			}
			if ok {
				want[i], found = true, true
			}
		}
		if !found {
			return nil, errors.Errorf("no activation %s: %s", msg.Quote(a), describeActivations(specs))
		}
	}
	var out []string
	for i, s := range specs {
		if want[i] {
			out = append(out, s.Name)
		}
	}
	return out, nil
}

// matchActivation reports whether the name or glob a names s.
func matchActivation(a string, s ActivationSpec) (bool, error) {
	if a == s.Name || a == s.TL {
		return true, nil
	}
	if !isGlob(a) {
		return false, nil
	}
	for _, name := range []string{s.Name, s.TL} {
		ok, err := path.Match(a, name)
		if err != nil {
			return false, errors.Errorf("activation glob %s: %v", msg.Quote(a), err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// isGlob reports whether a name holds path.Match's special characters.
func isGlob(name string) bool { return strings.ContainsAny(name, `*?[\`) }

// describeActivations names the activations of specs on one line, a
// block's once with N for its number.
func describeActivations(specs []ActivationSpec) string {
	var top, block []string
	layers, placed := 0, false
	for _, s := range specs {
		var n int
		if _, err := fmt.Sscanf(s.Name, "blocks.%d.", &n); err != nil {
			top = append(top, s.Name)
			continue
		}
		layers = max(layers, n+1)
		if n == 0 {
			block = append(block, strings.TrimPrefix(s.Name, "blocks.0."))
		}
		if !placed {
			top, placed = append(top, "blocks.N.*"), true
		}
	}
	listing := strings.Join(top, ", ")
	if layers > 0 {
		listing = strings.Replace(listing, "blocks.N.*", fmt.Sprintf("blocks.N.{%s} for N in 0..%d", strings.Join(block, ", "), layers-1), 1)
	}
	return fmt.Sprintf("the graph has %s; TransformerLens's names (blocks.N.attn.hook_pattern) and globs (blocks.*.attn.weights) name them too", listing)
}

// ActivationSpec is the spec of the graph's activation called name (any
// form ResolveActivations takes, naming one activation).
func (gr *Graph) ActivationSpec(name string) (ActivationSpec, error) {
	names, err := ResolveActivations(gr.specs, []string{name})
	if err != nil {
		return ActivationSpec{}, err
	}
	if len(names) != 1 {
		return ActivationSpec{}, errors.Errorf("activation %s names %d activations (%s), want one", msg.Quote(name), len(names), strings.Join(names, ", "))
	}
	return gr.specs[slices.IndexFunc(gr.specs, func(s ActivationSpec) bool { return s.Name == names[0] })], nil
}
