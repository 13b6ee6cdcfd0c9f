package main

import (
	"path/filepath"
	"testing"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/runlog"
)

// kernelPathConfigs are small runs that between them reach every kernel a
// training step uses: GEMMs with partial tiles (widths 12 and 20, not
// multiples of 16) and, with batch 16 x 12 positions, more than four rows;
// LayerNorm, a GELU MLP and dropout; RMSNorm and a SwiGLU MLP.
var kernelPathConfigs = []struct{ name, yaml string }{
	{"layernorm gelu", `seed: 5
task: {name: copy, length: 5, symbols: 6}
model: {d_model: 12, heads: 3, layers: 2, mlp: true, d_ff: 20, dropout: 0.1}
train: {batch_size: 16, steps: 200, lr: 1.0e-2, log_every: 10, eval_every: 50, eval_size: 32, checkpoint_every: 100}
`},
	{"rmsnorm swiglu", `seed: 6
task: {name: copy, length: 5, symbols: 6}
model: {d_model: 12, heads: 2, layers: 1, mlp: true, d_ff: 20, norm: rmsnorm, activation: swiglu}
train: {batch_size: 16, steps: 200, lr: 1.0e-2, log_every: 10, eval_every: 50, eval_size: 32, checkpoint_every: 100}
`},
}

// TestSameRunOnEveryKernelPath: the command, run under each kernel path this
// CPU has (ATTNSCOPE_KERNEL=generic, avx2, avx512), trains each of
// kernelPathConfigs to the same bits: weights, best weights, metrics (but
// for the timing), roles and circuits.
func TestSameRunOnEveryKernelPath(t *testing.T) {
	paths := []kernels.Path{kernels.Generic}
	for p := kernels.Generic + 1; p <= kernels.Detected(); p++ {
		paths = append(paths, p)
	}
	if len(paths) < 2 { // no AVX2 (or not amd64): one path, nothing to compare
		t.Skipf("this CPU runs only the %s kernels", kernels.Detected())
	}
	for _, c := range kernelPathConfigs {
		cfg := writeConfig(t, c.yaml)
		var dirs []string
		for _, p := range paths {
			dir := filepath.Join(t.TempDir(), p.String())
			cmd := helper(t, "-config", cfg, "-out", dir)
			cmd.Env = append(cmd.Env, kernels.EnvVar+"="+p.String())
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s on %s: %v\n%s", c.name, p, err, out)
			}
			dirs = append(dirs, dir)
		}
		for i, dir := range dirs[1:] {
			t.Run(c.name+"/"+paths[i+1].String(), func(t *testing.T) {
				sameFiles(t, dirs[0], dir, rundir.CheckpointFile, rundir.BestFile, runlog.MetricsFile, runlog.RolesFile, runlog.CircuitsFile)
			})
		}
	}
}
