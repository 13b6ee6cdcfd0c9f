package train

import (
	"testing"

	"github.com/attnscope/attnscope/model"
)

// ropeYAML sets every position and shape key of model/rope.go: a lab run
// reads them, trains on both paths, and its checkpoint holds them.
const ropeYAML = `
seed: 3
task: {name: reverse, length: 3, symbols: 5}
model: {d_model: 8, heads: 2, layers: 3, mlp: true, d_ff: 16, position: rope, rope_base: 500,
        head_dim: 6, rotary_dims: 4, rope_scaling: llama3, rope_factor: 8, rope_low_freq_factor: 1,
        rope_high_freq_factor: 4, rope_original_context: 16, window: 2, global_layers: [1],
        local_rope_base: 10}
train: {batch_size: 4, steps: 2, lr: 1.0e-2, log_every: 1, eval_every: 2, eval_size: 8}
`

// TestRopeKeysTrainALabRun: the run trains its steps on each path, and its
// checkpoint's model config is the one the YAML gave.
func TestRopeKeysTrainALabRun(t *testing.T) {
	for _, attention := range []string{"fused", "gorgonia"} {
		t.Run(attention, func(t *testing.T) {
			cfg := parse(t, ropeYAML, "model.attention="+attention)
			want := model.NewLayerList(1)
			if cfg.Model.GlobalLayers != want || cfg.Model.HeadDim != 6 || cfg.Model.RopeScaling != model.RopeScalingLlama3 {
				t.Fatalf("keys not read: %+v", cfg.Model)
			}
			dir := t.TempDir()
			res := runOK(t, cfg, Options{Dir: dir})
			if res.Step != 2 {
				t.Fatalf("ran to step %d, want 2", res.Step)
			}
			if got := lastCheckpoint(t, dir).Model.Config; got != cfg.Model {
				t.Errorf("checkpoint config %+v, want %+v", got, cfg.Model)
			}
		})
	}
}
