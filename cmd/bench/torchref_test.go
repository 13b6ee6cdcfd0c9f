package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/analysis"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/layers"
	"github.com/attnscope/attnscope/model"
)

// TestTorchRefIsTheGoModel: torch_ref.py's model of each size with full
// blocks (GPT-2's L4 and the Llama-style L4-llama) takes the Go model's
// weights as they are (load_checkpoint: the same names and shapes) and
// gives its logits on the same tokens within 1e-4 relative to the largest
// (float32 on both sides), so the two sides time the same model.
func TestTorchRefIsTheGoModel(t *testing.T) {
	python := tooltest.Torch(t)
	for _, name := range []string{"L4", "L4-llama"} {
		t.Run(name, func(t *testing.T) {
			s, err := sizeNamed(name)
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.New(s.modelConfig(layers.Fused), tensor.Float32, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params { // std 0.4 instead of 0.02 and norm weights off 1: a wrong formula shows
				for i := range p.Value.Float32s() {
					p.Value.Float32s()[i] = p.Value.Float32s()[i]*20 + float32(i%5)*0.05
				}
			}
			tensors, err := m.Tensors()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "weights.safetensors")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := safetensors.Write(f, tensors, nil); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			tokens := make([]int, s.SeqLen)
			for i := range tokens {
				tokens[i] = (7*i + 3) % s.V
			}
			pass, err := analysis.Forward(m, tokens, tokens, make([]float64, len(tokens)))
			if err != nil {
				t.Fatal(err)
			}
			want := pass.Logits.Data
			// torch_ref.py reads its flags when it loads; as a module (not
			// __main__) it defines the model without training it.
			script := `
import json, runpy, sys, torch
config, weights, tokens = sys.argv[1:]
sys.argv = ["torch_ref.py", "--config", config]
ref = runpy.run_path("torch_ref.py", run_name="torch_ref")
model = ref["AttnLM"](**ref["CONFIGS"][config])
ref["load_checkpoint"](model, weights, None)
with torch.no_grad():
    logits = model(torch.tensor([json.loads(tokens)]))
print(json.dumps(logits.reshape(-1).tolist()))
`
			toks, _ := json.Marshal(tokens)
			out, err := exec.Command(python, "-c", script, name, path, string(toks)).Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			var got []float64
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("python printed %q: %v", out, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d logits from PyTorch, %d from Go", len(got), len(want))
			}
			worst, scale := 0.0, 1.0
			for i := range want {
				worst, scale = math.Max(worst, math.Abs(got[i]-want[i])), math.Max(scale, math.Abs(want[i]))
			}
			if worst > 1e-4*scale {
				t.Errorf("PyTorch's logits differ from Go's by up to %.3g (largest logit %.3g)", worst, scale)
			}
			t.Logf("%d logits, largest %.3g, worst difference %.3g", len(want), scale, worst)
		})
	}
}
