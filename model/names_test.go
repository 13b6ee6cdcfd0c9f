package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/layers"
)

// TestResolveActivations: the lab's names, TransformerLens's and globs of
// either resolve to lab names, each once, in build order; a name or glob
// that names nothing is refused on one line listing every activation,
// a block's once.
func TestResolveActivations(t *testing.T) {
	cfg := testConfig(true, layers.Fused)
	specs := cfg.Activations(2, 3)
	for _, c := range []struct {
		asked, want []string
	}{
		{[]string{"blocks.1.attn.hook_pattern", "blocks.*.attn.weights", "hook_embed"}, []string{TokEmbActivation, AttnWeights(0), AttnWeights(1)}},
		{[]string{"blocks.?.hook_resid_mid", "ln_final.*"}, []string{ResidMid(0), ResidMid(1), NormScale("ln_f"), NormNormalized("ln_f")}},
		{[]string{"blocks.0.attn.hook_[qkv]"}, []string{AttnQ(0), AttnK(0), AttnV(0)}},
		{[]string{"logits", "logits"}, []string{LogitsActivation}},
	} {
		got, err := ResolveActivations(specs, c.asked)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.asked, got, err, c.want)
		}
	}
	_, err := ResolveActivations(specs, []string{"blocks.*.hook_rot_q"})
	want := `no activation "blocks.*.hook_rot_q": the graph has tok_emb, pos_emb, blocks.N.{resid_pre, ln1.scale, ln1.normalized, attn.q, attn.k, attn.v, attn.scores, attn.weights, attn.head_out, attn.result, attn_out, resid_mid, ln2.scale, ln2.normalized, mlp.pre, mlp.post, mlp_out, resid_post} for N in 0..1, ln_f.scale, ln_f.normalized, logits;`
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("a glob naming nothing: %v", err)
	}
}
