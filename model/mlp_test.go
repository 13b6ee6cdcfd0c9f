package model

import (
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/graphtest"
	"github.com/attnscope/attnscope/layers"
)

// mlpParts are the MLP kinds besides GPT-2's, each as the open model that
// has it, for the tests' tables.
var mlpParts = map[string]func(*Config){
	"gelu":        func(c *Config) { c.Activation = ActivationGELU },                       // nanoGPT's
	"swiglu":      func(c *Config) { c.Activation, c.MLPBias = ActivationSwiGLU, FlagOff }, // Llama's
	"relu2":       func(c *Config) { c.Activation, c.MLPBias = ActivationReLU2, FlagOff },  // nanochat's
	"geglu":       func(c *Config) { c.Activation, c.MLPBias = ActivationGeGLU, FlagOff },  // Gemma's
	"no-mlp-bias": func(c *Config) { c.MLPBias = FlagOff },                                 // GPT-2's without biases
}

// refMLP is block pre's MLP ("blocks.0.") on x (rows, D) in plain-Go
// float64 loops: proj(act(fc x)), SwiGLU's down(silu(gate x) * up x) or
// GeGLU's down(gelu_tanh(gate x) * up x).
// p gives a tensor's values, nil for one the model lacks (a bias).
func refMLP(cfg Config, p func(string) []float64, pre string, x []float64) []float64 {
	d, f := cfg.DModel, cfg.DFF
	linear := func(x []float64, in int, name string) []float64 {
		return refLinear(x, in, p(pre+"mlp."+name+".weight"), p(pre+"mlp."+name+".bias"))
	}
	if cfg.Gated() {
		h, up := linear(x, d, "gate"), linear(x, d, "up")
		for i, z := range h {
			if cfg.ActivationKind() == ActivationGeGLU {
				h[i] = graphtest.Activation("gelu_tanh", z) * up[i]
				continue
			}
			h[i] = graphtest.SiLU(z) * up[i]
		}
		return linear(h, f, "down")
	}
	h := linear(x, d, "fc")
	for i, v := range h {
		h[i] = graphtest.Activation(cfg.ActivationKind(), v)
	}
	return linear(h, f, "proj")
}

// TestMLPOpsOnEachPath: the node that applies each MLP kind's activation
// (blocks.0.mlp.gelu, .relu2, .swiglu) is one of this project's ops on the
// fused path and Gorgonia's own on the Gorgonia path, where only the exact
// GELU's erf is this project's (ops.Erf: Gorgonia has none).
func TestMLPOpsOnEachPath(t *testing.T) {
	parts := map[string]string{"": "gelu", "gelu": "gelu", "swiglu": "swiglu", "relu2": "relu2", "no-mlp-bias": "gelu", "geglu": "geglu"}
	eachPath(t, func(t *testing.T, path layers.Path) {
		for part, node := range parts {
			cfg := testConfig(true, path)
			if part != "" {
				mlpParts[part](&cfg)
			}
			s, err := mustBuild(t, randomModel(t, cfg, tensor.Float64), BuildOptions{Batch: 1, SeqLen: 2}).Summary()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{"blocks.0.mlp." + node: path == layers.Gorgonia}
			if part == "gelu" && path == layers.Gorgonia {
				want["blocks.0.mlp.gelu.erf"] = false
			}
			for _, r := range s.Rows {
				if builtin, ok := want[r.Name]; ok {
					if r.Builtin != builtin {
						t.Errorf("%s: %s is %s, Gorgonia's own %t, want %t", cfg.ActivationKind(), r.Name, r.Op, r.Builtin, builtin)
					}
					delete(want, r.Name)
				}
			}
			if len(want) > 0 {
				t.Errorf("%s: no nodes %v", cfg.ActivationKind(), want)
			}
		}
	})
}
