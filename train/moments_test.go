package train

import (
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/rundir"
)

// TestMomentsDtypeByDefault: a fine-tuning run keeps Adam's moments in
// float32 and a lab run in float64, unless train.moments says otherwise; the
// optimizer state file holds them in that dtype, every tensor of it.
func TestMomentsDtypeByDefault(t *testing.T) {
	fineTune := func(sets ...string) rundir.Config {
		_, cfg := fineTuneSetup(t, pretrainedFixtures[0], append([]string{"train.steps=2", "train.warmup_steps=0", "train.checkpoint_every=2"}, sets...)...)
		return cfg
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		cfg  rundir.Config
		want string
	}{
		{"finetune", fineTune(), safetensors.F32},
		{"finetune64", fineTune("train.moments=float64"), safetensors.F64},
		{"lab", parse(t, smallYAML, "train.steps=2", "train.warmup_steps=0", "train.checkpoint_every=2"), safetensors.F64},
		{"lab32", parse(t, smallYAML, "train.steps=2", "train.warmup_steps=0", "train.checkpoint_every=2", "train.moments=float32"), safetensors.F32},
	} {
		run := filepath.Join(dir, c.name)
		runOK(t, c.cfg, Options{Dir: run})
		f, err := safetensors.Open(filepath.Join(run, rundir.StateFile(2)), 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range f.Tensors() {
			if in.DType != c.want {
				t.Errorf("%s: %s is %s, want %s", c.name, in.Name, in.DType, c.want)
			}
		}
		f.Close()
	}
	// A resume reads the moments train.moments names, or, when it names
	// none, those the state file holds: a fine-tuning run saved while the
	// default was float64 resumes.
	for moments, want := range map[string]tensor.Dtype{"": {}, "float32": tensor.Float32, "float64": tensor.Float64} {
		var sets []string
		if moments != "" {
			sets = append(sets, "train.moments="+moments)
		}
		r := &runner{cfg: fineTune(sets...)}
		if got := r.resumedMoments(); got != want {
			t.Errorf("train.moments %q: a resume reads %v moments, want %v", moments, got, want)
		}
	}
}
