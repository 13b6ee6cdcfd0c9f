package main

import (
	"encoding/json"
	"fmt"
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
			m := scaledModel(t, s.modelConfig(layers.Fused), 20)
			tokens := testTokens(s.SeqLen, s.V)
			pass, err := analysis.Forward(m, tokens, tokens, make([]float64, len(tokens)))
			if err != nil {
				t.Fatal(err)
			}
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
			var got []float64
			runPython(t, python, script, &got, name, writeWeights(t, m), tokensJSON(tokens))
			checkClose(t, "logits", got, pass.Logits.Float64s(), 1e-4)
		})
	}
}

// TestTorchDecodeIsTheGoModel: torch_decode.py's GPT-2, written from GPT-2's
// definition (Conv1D weights, c_attn, its own KV cache), and its Llama,
// written from Llama's (q, k and v projections apart, rotate-half rotary
// positions, RMSNorm, SwiGLU), take the Go model's weights through
// from_attnscope and, on small models of each -decode-config's code path
// (GPT-2's: biased c_attn, tied head; sort's: no c_attn bias, a head of
// its own; llama's: stories110M's parts, tied head; and a Llama with
// grouped-query heads and a head of its own, as Llama 2's larger models
// have), give the Go model's logits at every
// decoding step (its cache filled one position at a time) and, from its
// forward with maps, the Go forward's logits and every attention map:
// logits within 2e-5 relative to the largest, maps within 5e-5 (float32 on
// both sides; GELU's exact form instead of the tanh one moves the logits by
// 4.7e-4 and the maps by 1.4e-4).
func TestTorchDecodeIsTheGoModel(t *testing.T) {
	python := tooltest.Torch(t)
	sort, _ := decodeSettingNamed("sort")
	configs := map[string]model.Config{
		"gpt2":             {Vocab: 37, Context: 12, DModel: 32, Heads: 4, Layers: 2, MLP: true, DFF: 80, QKVBias: true, OutBias: true, TieEmbeddings: true},
		"sort":             sort.config(12),
		"llama":            smallLlama(false, 0),
		"llama-gqa-untied": smallLlama(true, 2),
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			m := scaledModel(t, cfg, 4)
			tokens := testTokens(cfg.Context, cfg.Vocab)
			pass, err := analysis.Forward(m, tokens, tokens, make([]float64, len(tokens)))
			if err != nil {
				t.Fatal(err)
			}
			// As a module (not __main__) torch_decode.py defines the model
			// and runs nothing.
			script := `
import json, runpy, sys, torch
sys.path.insert(0, "../../python")
import attnscope_torch
cfg, weights, tokens = eval(sys.argv[1]), sys.argv[2], torch.tensor([json.loads(sys.argv[3])])
ref = runpy.run_path("torch_decode.py", run_name="torch_decode")
m = ref["from_attnscope"](attnscope_torch.to_torch(attnscope_torch.read_safetensors(weights)[0]), cfg)
T = tokens.shape[1]
with torch.no_grad():
    caches = ref["new_caches"](cfg, 1, T)
    steps = [ref["decode_step"](m, cfg, caches, tokens[:, t], t) for t in range(T)]
    logits, maps = ref["forward"](m, cfg, tokens)
print(json.dumps({"decode": torch.cat(steps).reshape(-1).tolist(), "forward": logits.reshape(-1).tolist(),
                  "maps": torch.cat(maps).reshape(-1).tolist()}))
`
			var got struct{ Decode, Forward, Maps []float64 }
			runPython(t, python, script, &got, torchDecodeDict(cfg, cfg.Context), writeWeights(t, m), tokensJSON(tokens))
			checkClose(t, "decoded logits", got.Decode, pass.Logits.Float64s(), 2e-5)
			checkClose(t, "forward logits", got.Forward, pass.Logits.Float64s(), 2e-5)
			checkClose(t, "attention maps", got.Maps, pass.Attention.Float64s(), 5e-5)
		})
	}
}

// smallLlama is a small model of the llama setting's parts (stories110M's
// with a smaller width, depth, vocabulary and context), with a head of its
// own when untied and kvHeads key and value heads (0: one per head).
func smallLlama(untied bool, kvHeads int) model.Config {
	c := stories110M
	c.Vocab, c.Context, c.DModel, c.Heads, c.Layers, c.DFF, c.KVHeads = 37, 12, 32, 4, 2, 48, kvHeads
	c.TieEmbeddings = !untied
	return c
}

// torchDecodeConfig is the setting's entry of torch_decode.py's CONFIGS:
// context 0 when the position table follows the row's length.
func torchDecodeConfig(s decodeSetting) string {
	c := s.config(64)
	context := c.Context
	if s.config(128).Context != context {
		context = 0
	}
	return torchDecodeDict(c, context)
}

// torchDecodeDict is c as torch_decode.py's config dict literal: a Llama
// (a SwiGLU MLP) in its family's keys, else GPT-2's.
func torchDecodeDict(c model.Config, context int) string {
	py := map[bool]string{false: "False", true: "True"}
	if c.Activation == model.ActivationSwiGLU {
		return fmt.Sprintf(`dict(family="llama", d_model=%d, heads=%d, kv_heads=%d, d_ff=%d, vocab=%d, layers=%d, tied=%s, context=%d, eps=%g, rope_base=%g)`,
			c.DModel, c.Heads, c.KVHeadCount(), c.DFF, c.Vocab, c.Layers, py[c.TieEmbeddings], context, c.NormEps, c.RopeBase)
	}
	return fmt.Sprintf("dict(d_model=%d, heads=%d, d_ff=%d, vocab=%d, layers=%d, qkv_bias=%s, tied=%s, context=%d)",
		c.DModel, c.Heads, c.DFF, c.Vocab, c.Layers, py[c.QKVBias], py[c.TieEmbeddings], context)
}

// scaledModel is a float32 model of cfg whose weights are scale times
// model.New's (std 0.4 instead of 0.02 at 20) and whose norm weights are
// off 1, so that a wrong formula on the other side shows.
func scaledModel(t *testing.T, cfg model.Config, scale float32) *model.Model {
	return shiftedModel(t, cfg, scale, 0.05)
}

// shiftedModel is a float32 model of cfg whose i-th value of each weight is
// scale times model.New's plus shift times i%5.
func shiftedModel(t *testing.T, cfg model.Config, scale, shift float32) *model.Model {
	t.Helper()
	m, err := model.New(cfg, tensor.Float32, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Params {
		for i := range p.Value.Float32s() {
			p.Value.Float32s()[i] = p.Value.Float32s()[i]*scale + float32(i%5)*shift
		}
	}
	return m
}

// writeWeights writes m's tensors to a safetensors file in a temporary
// directory and returns its path.
func writeWeights(t *testing.T, m *model.Model) string {
	t.Helper()
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
	return path
}

// testTokens are n ids spread over the vocabulary.
func testTokens(n, vocab int) []int {
	tokens := make([]int, n)
	for i := range tokens {
		tokens[i] = (7*i + 3) % vocab
	}
	return tokens
}

func tokensJSON(tokens []int) string {
	b, _ := json.Marshal(tokens)
	return string(b)
}

// runPython runs script with args and decodes the JSON it prints into out.
func runPython(t *testing.T, python, script string, out any, args ...string) {
	t.Helper()
	printed, err := exec.Command(python, append([]string{"-c", script}, args...)...).Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("python: %s", msg)
	}
	if err := json.Unmarshal(printed, out); err != nil {
		t.Fatalf("python printed %q: %v", printed, err)
	}
}

// checkClose fails unless got and want have one length and differ by at
// most tol times the largest |want| (at least 1).
func checkClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values from PyTorch, %d from Go", what, len(got), len(want))
	}
	worst, scale := 0.0, 1.0
	for i := range want {
		worst, scale = math.Max(worst, math.Abs(got[i]-want[i])), math.Max(scale, math.Abs(want[i]))
	}
	if worst > tol*scale {
		t.Errorf("%s: PyTorch's differ from Go's by up to %.3g (largest %.3g)", what, worst, scale)
	}
	t.Logf("%s: %d values, largest %.3g, worst difference %.3g", what, len(want), scale, worst)
}
