package rundir_test

import (
	"encoding/json"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
	"gorgonia.org/tensor"
)

// TestPyTorchLoadsCheckpoint: python/attnscope_torch.py loads a checkpoint
// that SaveCheckpoint wrote (tensor names, layouts and the config from the
// metadata, load_state_dict strict) and its PyTorch model gives the logits
// of model.Build on the same tokens, within 1e-5 relative to the largest
// logit (Go runs float32, PyTorch float64 of the same float32 weights),
// for the original design, a rope + grouped-query + window model with full
// blocks, a Llama-style model (RMSNorm, SwiGLU, QK-norm, tied, no biases)
// and a nanoGPT-style one (LayerNorm without bias, exact GELU, tied), and
// that one fine-tuned: its run config names init_from, records the
// pretrained model and trains on windows shorter than the model's context.
func TestPyTorchLoadsCheckpoint(t *testing.T) {
	python := tooltest.Torch(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	nanoGPTStyle := model.Config{Vocab: 11, Context: 9, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 32,
		NormBias: model.FlagOff, Activation: model.ActivationGELU, MLPBias: model.FlagOff, TieEmbeddings: true}
	for _, c := range []struct {
		name      string
		cfg       model.Config
		fineTuned bool
	}{
		{"learned", model.Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, OutBias: true, QKVBias: true}, false},
		{"rope-gqa-window", model.Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 32, OutBias: true,
			LMBias: true, Position: model.PositionRope, KVHeads: 2, Window: 4}, false},
		{"llama-style", model.Config{Vocab: 11, Context: 9, DModel: 16, Heads: 4, Layers: 2, MLP: true, DFF: 24,
			Position: model.PositionRope, KVHeads: 2, Norm: model.NormRMS, NormEps: 1e-6, Activation: model.ActivationSwiGLU,
			MLPBias: model.FlagOff, TieEmbeddings: true, QKNorm: true}, false},
		{"nanogpt-style", nanoGPTStyle, false},
		{"fine-tuned", nanoGPTStyle, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := model.New(c.cfg, tensor.Float32, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params { // std 0.4 instead of 0.02: logits far from 0, so a wrong formula shows
				for i := range p.Value.Float32s() {
					p.Value.Float32s()[i] *= 20
				}
			}
			path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
			run := rundir.DefaultConfig()
			run.Task, run.Model = data.TaskConfig{Name: "repeat", Length: c.cfg.Context, Symbols: c.cfg.Vocab}, c.cfg
			if c.fineTuned {
				run.InitFrom, run.Task = "/models/char", data.TaskConfig{Name: data.Text, Path: "/data/text.txt", Length: 4}
				run.Init = rundir.InitRecord{Path: "/models/char", Source: "nanoGPT", Vocab: c.cfg.Vocab, Context: c.cfg.Context,
					Files: []rundir.FileRecord{{Path: "/models/char/ckpt.pt", Size: 1, SHA256: "00"}}}
			}
			if err := rundir.SaveCheckpoint(path, m, run, 7); err != nil {
				t.Fatal(err)
			}
			tokens := []int{3, 1, 4, 1, 5, 9, 2, 6, 5}
			want := opentest.Logits(t, m, &data.Batch{Size: 1, SeqLen: len(tokens), Tokens: tokens, Targets: tokens, Mask: make([]float64, len(tokens))})
			script := `
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import attnscope_torch
model, info = attnscope_torch.load(sys.argv[2])
tokens = torch.tensor([json.loads(sys.argv[3])])
with torch.no_grad():
    logits, _ = model(tokens)
print(json.dumps({"step": info["step"], "logits": logits.reshape(-1).tolist()}))
`
			toks, _ := json.Marshal(tokens)
			cmd := exec.Command(python, "-c", script, filepath.Join(root, "python"), path, string(toks))
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, errText(err))
			}
			var got struct {
				Step   int       `json:"step"`
				Logits []float64 `json:"logits"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("python printed %q: %v", raw, err)
			}
			if got.Step != 7 || len(got.Logits) != len(want) {
				t.Fatalf("python: step %d, %d logits; want 7 and %d", got.Step, len(got.Logits), len(want))
			}
			worst, scale := 0.0, 1.0
			for i := range want {
				worst = math.Max(worst, math.Abs(got.Logits[i]-want[i]))
				scale = math.Max(scale, math.Abs(want[i]))
			}
			if worst > 1e-5*scale {
				t.Errorf("PyTorch's logits differ from Go's by up to %.3g (largest logit %.3g; tolerance 1e-5 of it)", worst, scale)
			}
		})
	}
}

// errText is the stderr an exec.ExitError carries, if any.
func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
