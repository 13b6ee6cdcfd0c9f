package hf_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// TestSaveGPT2WritesHuggingFaceLayout: a GPT-2 loaded from the fixture the
// PyTorch script wrote in Hugging Face's layout, saved again by SaveGPT2,
// holds every tensor under the fixture's name with the fixture's bytes
// (Conv1D weights transposed back), and loads back to the same logits; a
// model GPT-2 cannot hold is refused in one line.
func TestSaveGPT2WritesHuggingFaceLayout(t *testing.T) {
	fixture := filepath.Join("testdata", "prefixed")
	m := load(t, fixture, hf.Options{}).Model
	dir := filepath.Join(t.TempDir(), "saved")
	if err := hf.SaveGPT2(dir, m, nil); err != nil {
		t.Fatal(err)
	}
	want, saved := readAll(t, filepath.Join(fixture, hf.WeightsFile)), readAll(t, filepath.Join(dir, hf.WeightsFile))
	for name, data := range saved {
		if !slices.Equal(data, want[name]) {
			t.Errorf("%s: %d values differ from the fixture's %d", name, len(data), len(want[name]))
		}
	}
	if len(saved) != len(want)-1 { // the fixture also holds the tied lm_head.weight
		t.Errorf("saved %d tensors, the fixture %d besides lm_head.weight", len(saved), len(want)-1)
	}
	ref := readReference(t, "prefixed")
	closeTo(t, "saved and loaded", logits(t, load(t, dir, hf.Options{}).Model, ref.Tokens), logits(t, m, ref.Tokens), 0)

	rope, err := model.New(model.Config{Vocab: 9, Context: 8, DModel: 8, Heads: 2, Layers: 1, MLP: true, DFF: 8,
		QKVBias: true, OutBias: true, Position: model.PositionRope}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = hf.SaveGPT2(filepath.Join(t.TempDir(), "rope"), rope, nil)
	if err == nil || !strings.Contains(err.Error(), "not a GPT-2: model.position = rope") || strings.Contains(err.Error(), "\n") {
		t.Errorf("saving a rope model as GPT-2: %v", err)
	}
}

// readAll is every tensor of a float32 safetensors file, by name.
func readAll(t *testing.T, path string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(path, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, info := range f.Tensors() {
		raw, err := f.Float32(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[info.Name] = raw
	}
	return out
}

// TestGPT2Shaped: a config GPT2LMHeadModel cannot hold is refused on one
// line naming every key that differs, each with GPT-2's own; GPT-2's
// block, tied or not, with either GELU, passes.
func TestGPT2Shaped(t *testing.T) {
	gpt2 := model.Config{Vocab: 9, Context: 8, DModel: 8, Heads: 2, Layers: 1, MLP: true, DFF: 8, QKVBias: true, OutBias: true}
	exact := gpt2
	exact.Activation, exact.TieEmbeddings = model.ActivationGELU, true
	for _, c := range []model.Config{gpt2, exact} {
		if err := hf.GPT2Shaped(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	llama := gpt2
	llama.Position, llama.Norm, llama.Activation, llama.MLPBias = model.PositionRope, model.NormRMS, model.ActivationSwiGLU, model.FlagOff
	llama.QKVBias, llama.OutBias, llama.KVHeads = false, false, 1
	latent := gpt2
	latent.KVLatent, latent.Window, latent.QKNorm, latent.LMBias, latent.NormBias = 4, 3, true, true, model.FlagOff
	attnOnly := model.Config{Vocab: 9, Context: 8, DModel: 8, Heads: 2, Layers: 1, Position: model.PositionALiBi}
	gemmaParts := gpt2
	gemmaParts.HeadDim, gemmaParts.AttnScale, gemmaParts.AttnSoftcap, gemmaParts.FinalSoftcap, gemmaParts.EmbedScale = 6, 0.5, 50, 30, 2.8
	gemmaParts.NormPlacement, gemmaParts.ParallelResidual = model.PlacementSandwich, true
	for _, c := range []struct {
		name string
		cfg  model.Config
		want []string
	}{
		{"llama", llama, []string{"model.position = rope (GPT-2's positions are learned)", "model.norm = rmsnorm (GPT-2's is layernorm)",
			"model.activation = swiglu", "model.mlp_bias = false, model.qkv_bias = false, model.out_bias = false (GPT-2 has these biases)",
			"model.kv_heads = 1 of 2 heads (grouped heads"}},
		{"latent", latent, []string{"model.kv_latent = 4 (latent attention", "model.window = 3", "model.qk_norm = true",
			"model.lm_head_bias = true", "model.norm_bias = false"}},
		{"the parts of issue 45", gemmaParts, []string{"model.head_dim = 6 (GPT-2's heads are d_model / heads = 4 wide)",
			"model.attn_scale = 0.5", "model.attn_softcap = 50", "model.final_softcap = 30", "model.embed_scale = 2.8",
			"model.norm_placement = sandwich", "model.parallel_residual = true"}},
		{"attention-only", attnOnly, []string{"model.mlp = false (attention-only blocks", "model.position = alibi", "model.qkv_bias = false, model.out_bias = false (GPT-2 has"}},
	} {
		err := hf.GPT2Shaped(c.cfg)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", c.name, err, w)
			}
		}
		if c.name == "latent" && strings.Contains(err.Error(), "kv_heads") {
			t.Errorf("latent: %q names kv_heads, which a latent model does not use", err)
		}
	}
}
