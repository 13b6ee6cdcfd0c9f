package hf

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"
	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// SaveGPT2 writes m as a Hugging Face GPT-2 directory: config.json and
// model.safetensors in float32, the tensors under GPT2LMHeadModel's names
// ("transformer.h.0.attn.c_attn.weight", Conv1D weights stored (in, out)),
// which transformers' GPT2LMHeadModel.from_pretrained and Load read back.
// m must be a GPT-2 (GPT2Shaped). config.json names the special ids of
// specials, null where it has none; nil leaves them out, so readers take
// GPT2Config's defaults (50256, GPT-2's <|endoftext|>). dir is created if
// missing; files in it are replaced whole (written atomically).
func SaveGPT2(dir string, m *model.Model, specials *Specials) error {
	c := m.Config
	if err := GPT2Shaped(c); err != nil {
		return errors.Wrapf(err, "%s: the model is not a GPT-2", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return errors.Wrap(err, "creating the model directory")
	}
	names := map[string]target{}
	for name, t := range gpt2Tensors(c) {
		if t.param != "" && strings.HasPrefix(name, "transformer.") || name == "lm_head.weight" && t.param != "" {
			names[t.param] = target{param: name, transpose: t.transpose}
		}
	}
	var tensors []safetensors.Tensor
	for _, p := range m.Params {
		hf, ok := names[p.Name]
		if !ok {
			return errors.Errorf("%s: tensor %s has no GPT-2 name", dir, p.Name)
		}
		values, err := float32s(p.Value)
		if err != nil {
			return errors.Wrap(err, p.Name)
		}
		shape := []int(p.Value.Shape())
		if hf.transpose {
			t := make([]float32, len(values))
			kernels.Transpose(t, values, shape[0], shape[1])
			values, shape = t, []int{shape[1], shape[0]}
		}
		tensors = append(tensors, safetensors.Tensor{Name: hf.param, DType: "F32", Shape: shape, Data: safetensors.EncodeFloat32(values)})
	}
	config, err := json.MarshalIndent(gpt2ConfigJSON(c, specials), "", "  ")
	if err != nil {
		return errors.Wrap(err, "encoding config.json")
	}
	err = safefile.WriteFileAtomic(filepath.Join(dir, WeightsFile), func(w io.Writer) error {
		return safetensors.Write(w, tensors, map[string]string{"format": "pt"}) // transformers refuses another format
	})
	if err != nil {
		return err
	}
	return safefile.WriteFileAtomic(filepath.Join(dir, ConfigFile), func(w io.Writer) error {
		_, err := w.Write(append(config, '\n'))
		return err
	})
}

// float32s are the values of t in float32: a float32 model's own, not
// copied (the file is float32 whatever the model's dtype).
func float32s(t *tensor.Dense) ([]float32, error) {
	if t.Dtype() == tensor.Float32 {
		return t.Float32s(), nil
	}
	values, err := model.Float64s(t)
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(values))
	for i, v := range values {
		out[i] = float32(v)
	}
	return out, nil
}

// GPT2Shaped refuses a config GPT2LMHeadModel cannot hold, naming every
// key that differs from GPT-2's block and what GPT-2 has instead, on one
// line ("model.position = rope (GPT-2's positions are learned); ...").
func GPT2Shaped(c model.Config) error {
	var diffs []string
	differs := func(cond bool, format string, args ...any) {
		if cond {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	differs(!c.MLP, "model.mlp = false (attention-only blocks; GPT-2's have an MLP and a final LayerNorm)")
	differs(c.PositionKind() != model.PositionLearned, "model.position = %s (GPT-2's positions are learned)", c.PositionKind())
	if c.MLP {
		differs(c.NormKind() != model.NormLayer, "model.norm = %s (GPT-2's is layernorm)", c.NormKind())
		differs(c.NormKind() == model.NormLayer && !c.NormBias.On(), "model.norm_bias = false (GPT-2's LayerNorms have biases)")
		differs(c.ActivationKind() != model.ActivationGELUTanh && c.ActivationKind() != model.ActivationGELU,
			"model.activation = %s (GPT-2's is gelu_tanh, or gelu)", c.ActivationKind())
	}
	var biases []string
	for _, b := range []struct {
		key string
		off bool
	}{{"model.mlp_bias", c.MLP && !c.MLPBias.On()}, {"model.qkv_bias", !c.QKVBias}, {"model.out_bias", !c.OutBias}} {
		if b.off {
			biases = append(biases, b.key+" = false")
		}
	}
	differs(len(biases) > 0, "%s (GPT-2 has these biases)", strings.Join(biases, ", "))
	differs(c.LMBias, "model.lm_head_bias = true (GPT-2's LM head has none)")
	differs(c.KVLatent == 0 && c.KVHeadCount() != c.Heads, "model.kv_heads = %d of %d heads (grouped heads; GPT-2's are multi-head)", c.KVHeadCount(), c.Heads)
	differs(c.KVLatent > 0, "model.kv_latent = %d (latent attention; GPT-2's is multi-head)", c.KVLatent)
	differs(c.Window > 0, "model.window = %d (GPT-2 attends to every earlier token)", c.Window)
	differs(c.QKNorm, "model.qk_norm = true (GPT-2 does not normalise q and k)")
	differs(c.Heads*c.DHead() != c.DModel, "model.head_dim = %d (GPT-2's heads are d_model / heads = %d wide)", c.DHead(), c.DModel/c.Heads)
	differs(c.AttnScale != 0, "model.attn_scale = %v (GPT-2 scales the scores by 1/sqrt(head width))", c.AttnScale)
	differs(c.AttnSoftcap != 0, "model.attn_softcap = %v (GPT-2 does not cap the scores)", c.AttnSoftcap)
	differs(c.FinalSoftcap != 0, "model.final_softcap = %v (GPT-2 does not cap the logits)", c.FinalSoftcap)
	differs(c.EmbedScale != 0, "model.embed_scale = %v (GPT-2 adds its embeddings unscaled)", c.EmbedScale)
	if c.MLP {
		differs(c.PlacementKind() != model.PlacementPre, "model.norm_placement = %s (GPT-2's norms are before each sublayer)", c.PlacementKind())
		differs(c.ParallelResidual, "model.parallel_residual = true (GPT-2 adds the attention, then the MLP)")
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

// gpt2ConfigJSON is the config.json of a GPT-2 of config c, with the
// special ids of specials (none when nil).
func gpt2ConfigJSON(c model.Config, specials *Specials) map[string]any {
	activation := "gelu_new"
	if c.ActivationKind() == model.ActivationGELU {
		activation = "gelu"
	}
	out := map[string]any{
		"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2",
		"vocab_size": c.Vocab, "n_positions": c.Context, "n_ctx": c.Context, "n_embd": c.DModel,
		"n_layer": c.Layers, "n_head": c.Heads, "n_inner": c.DFF, "activation_function": activation,
		"layer_norm_epsilon": c.Eps(), "tie_word_embeddings": c.TieEmbeddings,
	}
	if specials != nil {
		out["bos_token_id"], out["eos_token_id"] = nil, nil
		if specials.BOS >= 0 {
			out["bos_token_id"] = specials.BOS
		}
		switch len(specials.EOS) {
		case 0:
		case 1:
			out["eos_token_id"] = specials.EOS[0]
		default:
			out["eos_token_id"] = specials.EOS
		}
	}
	return out
}
