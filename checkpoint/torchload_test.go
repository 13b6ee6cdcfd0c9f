package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/checkpoint"
	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/initfrom"
	"github.com/attnscope/attnscope/internal/tooltest"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/rundir"
	"github.com/attnscope/attnscope/train"
	"gorgonia.org/tensor"
)

// TestPyTorchLoadsCheckpoint: python/attnscope_torch.py loads a checkpoint
// that Save wrote (tensor names, layouts and the config from the
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
				run.Init = initfrom.Record{Path: "/models/char", Source: "nanoGPT", Vocab: c.cfg.Vocab, Context: c.cfg.Context,
					Files: []initfrom.FileRecord{{Path: "/models/char/ckpt.pt", Size: 1, SHA256: "00"}}}
			}
			if err := checkpoint.Save(path, m, run, 7); err != nil {
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

// TestPyTorchSavesCheckpoint: the way back. A model trained here, loaded
// into PyTorch (attnscope_torch.load) and its state dict saved back with
// python/to_checkpoint.py, opens as inspect opens a checkpoint (package
// open) with the run's config and step and logits equal to the original's
// bit for bit; a state dict edited in PyTorch opens with PyTorch's logits of
// the edit. A state dict missing a weight, and a run's own checkpoint as
// the output, are refused on one line, exit status 1, nothing written.
func TestPyTorchSavesCheckpoint(t *testing.T) {
	python := tooltest.Torch(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	cfg, err := rundir.ParseConfig("tiny.yaml", []byte(`
task: {name: copy, length: 4, symbols: 6}
model: {d_model: 16, heads: 2, layers: 2, mlp: true, position: rope}
train: {batch_size: 4, steps: 5, warmup_steps: 0, log_every: 0, eval_every: 0, checkpoint_every: 5}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := train.Run(context.Background(), cfg, train.Options{Dir: run}); err != nil {
		t.Fatal(err)
	}
	original, err := checkpoint.Load(filepath.Join(run, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int{3, 1, 4, 1, 5, 6, 2, 0, 5}
	// PyTorch writes the state dict as loaded (state.pt), edited (edited.pt:
	// the token embedding doubled) and without a weight (partial.pt), and
	// prints the edited model's logits.
	script := `
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import attnscope_torch
model, info = attnscope_torch.load(sys.argv[2])
out = sys.argv[3]
torch.save(model.state_dict(), out + "/state.pt")
state = model.state_dict()
del state["tok_emb.weight"]
torch.save(state, out + "/partial.pt")
with torch.no_grad():
    model.tok_emb.weight.mul_(2)
    logits, _ = model(torch.tensor([json.loads(sys.argv[4])]))
torch.save(model.state_dict(), out + "/edited.pt")
print(json.dumps(logits.reshape(-1).tolist()))
`
	toks, _ := json.Marshal(tokens)
	raw, err := exec.Command(python, "-c", script, filepath.Join(root, "python"), filepath.Join(run, rundir.CheckpointFile), dir, string(toks)).Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, errText(err))
	}
	var editedLogits []float64
	if err := json.Unmarshal(raw, &editedLogits); err != nil {
		t.Fatalf("python printed %q: %v", raw, err)
	}
	toCheckpoint := func(args ...string) (string, error) {
		cmd := exec.Command(python, append([]string{filepath.Join(root, "python", "to_checkpoint.py")}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	batch := &data.Batch{Size: 1, SeqLen: len(tokens), Tokens: tokens, Targets: tokens, Mask: make([]float64, len(tokens))}
	want := opentest.Logits(t, original.Model, batch)
	for _, c := range []struct {
		state  string
		logits []float64
		exact  bool
	}{
		{"state.pt", want, true},
		{"edited.pt", editedLogits, false},
	} {
		back := filepath.Join(dir, c.state+".safetensors")
		if out, err := toCheckpoint(filepath.Join(dir, c.state), run, back); err != nil {
			t.Fatalf("to_checkpoint.py %s: %v\n%s", c.state, err, out)
		}
		op, err := open.Open(back, open.Options{})
		if err != nil {
			t.Fatalf("opening what PyTorch saved from %s: %v", c.state, err)
		}
		if op.Step != 5 || op.Run.Model != original.Config.Model || op.Run.Task != original.Config.Task {
			t.Errorf("%s: step %d, config %+v; want the run's step 5 and config %+v", c.state, op.Step, *op.Run, original.Config)
		}
		got := opentest.Logits(t, op.Model, batch)
		for i := range got {
			if (c.exact && got[i] != c.logits[i]) || math.Abs(got[i]-c.logits[i]) > 1e-5*math.Max(1, math.Abs(c.logits[i])) {
				t.Fatalf("%s: logit %d is %v, want %v", c.state, i, got[i], c.logits[i])
			}
		}
	}
	ownCheckpoint := filepath.Join(run, rundir.CheckpointFile)
	before, err := os.ReadFile(ownCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "partial.pt"), run, filepath.Join(dir, "partial.safetensors")}, "missing ['tok_emb.weight']"},
		{[]string{filepath.Join(dir, "state.pt"), run, ownCheckpoint}, "is a run's own checkpoint.safetensors"},
	} {
		out, err := toCheckpoint(c.args...)
		if err == nil || !strings.HasPrefix(out, "to_checkpoint.py: ") || !strings.Contains(out, c.want) || strings.Count(out, "\n") != 1 {
			t.Errorf("to_checkpoint.py %v: %v, printed %q; want exit 1 and one line containing %q", c.args, err, out, c.want)
		}
	}
	if after, err := os.ReadFile(ownCheckpoint); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the run's own checkpoint changed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "partial.safetensors")); !os.IsNotExist(err) {
		t.Errorf("a refused state dict left a file: %v", err)
	}
}
