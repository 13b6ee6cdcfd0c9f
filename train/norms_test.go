package train

import (
	"path/filepath"
	"testing"
)

// TestNormsKeysTrain: a lab run whose YAML sets the norms keys (Gemma's
// sandwich norms with RMSNorm by (1 + w) and QK-norm, OLMo 2's post-norms
// with QK-norm over the projections, GPT-NeoX's parallel residual) trains
// two steps, and its checkpoint holds the model the keys describe: the
// keys, and the tensors of the placement.
func TestNormsKeysTrain(t *testing.T) {
	for name, c := range map[string]struct {
		model  string
		tensor string // a tensor only this placement has
	}{
		"gemma": {"{d_model: 8, heads: 2, layers: 1, mlp: true, d_ff: 12, norm: rmsnorm, norm_placement: sandwich, norm_offset: true, qk_norm: true, position: rope}", "blocks.0.ln1_post.weight"},
		"olmo2": {"{d_model: 8, heads: 2, layers: 1, mlp: true, d_ff: 12, norm: rmsnorm, norm_placement: post, qk_norm: true, qk_norm_scope: all, position: rope, kv_heads: 1}", "blocks.0.ln2_post.weight"},
		"neox":  {"{d_model: 8, heads: 2, layers: 1, mlp: true, d_ff: 12, parallel_residual: true, position: rope}", "blocks.0.ln2.bias"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := parse(t, "seed: 3\ntask: {name: copy, length: 4, symbols: 5}\nmodel: "+c.model+
				"\ntrain: {batch_size: 4, steps: 2, log_every: 1, eval_every: 2, eval_size: 8, checkpoint_every: 0}\n")
			dir := filepath.Join(t.TempDir(), "run")
			res := runOK(t, cfg, Options{Dir: dir})
			if res.Step != 2 || res.LastEval == nil {
				t.Fatalf("the run stopped at step %d (evaluation %v)", res.Step, res.LastEval)
			}
			m := lastCheckpoint(t, dir).Model
			if m.Config != cfg.Model || m.Param(c.tensor) == nil {
				t.Errorf("the checkpoint's model %+v (with %s: %t), the run's %+v", m.Config, c.tensor, m.Param(c.tensor) != nil, cfg.Model)
			}
			if name == "olmo2" && m.Param("blocks.0.attn.q_norm.weight").Shape()[0] != 8 {
				t.Errorf("OLMo 2's q_norm is %v, want (H·d = 8)", m.Param("blocks.0.attn.q_norm.weight").Shape())
			}
		})
	}
}
