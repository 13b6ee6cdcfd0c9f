package train

import (
	"math"
	"path/filepath"
	"testing"
)

// gemmaYAML is a lab run on the parts of model/scores.go, set from YAML as
// a user would: GeGLU, a scale of its own, both soft-caps and scaled
// embeddings under a tied head.
const gemmaYAML = `
seed: 7
task: {name: copy, length: 4, symbols: 6}
model: {d_model: 16, heads: 2, layers: 1, mlp: true, position: rope, norm: rmsnorm, activation: geglu,
        mlp_bias: false, tie_embeddings: true, attn_scale: 0.25, attn_softcap: 50, final_softcap: 30, embed_scale: 4}
train: {batch_size: 4, steps: 3, lr: 1.0e-2, log_every: 1, eval_every: 3, eval_size: 8, checkpoint_every: 3}
`

// TestScoresKeysTrain: a run of gemmaYAML trains its steps on each path,
// GeGLU's d_ff defaults to SwiGLU's, and its checkpoint keeps every key,
// so the model it opens again is the model it trained.
func TestScoresKeysTrain(t *testing.T) {
	eachPath(t, func(t *testing.T, path string) {
		cfg := parse(t, gemmaYAML, path)
		if cfg.Model.DFF != 64 { // 2/3 of 4·16, 42, rounded up to a multiple of 32
			t.Errorf("d_ff %d, want GeGLU's default 64", cfg.Model.DFF)
		}
		dir := filepath.Join(t.TempDir(), "run")
		res := runOK(t, cfg, Options{Dir: dir})
		if res.Step != 3 || res.LastEval == nil || !(res.LastEval.EvalLoss < math.Inf(1)) {
			t.Fatalf("result %+v", res)
		}
		got := lastCheckpoint(t, dir).Config.Model
		if got.AttnScale != 0.25 || got.AttnSoftcap != 50 || got.FinalSoftcap != 30 || got.EmbedScale != 4 || got.Activation != "geglu" {
			t.Errorf("checkpoint's model config %+v lost a key", got)
		}
	})
}
