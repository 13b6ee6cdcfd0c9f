package hf

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/kernels"
	"github.com/attnscope/attnscope/internal/safefile"
	"github.com/attnscope/attnscope/internal/safetensors"
	"github.com/attnscope/attnscope/model"
)

// SaveGPT2 writes m as a Hugging Face GPT-2 directory: config.json and
// model.safetensors in float32, the tensors under GPT2LMHeadModel's names
// ("transformer.h.0.attn.c_attn.weight", Conv1D weights stored (in, out)),
// which transformers' GPT2LMHeadModel.from_pretrained and Load read back.
// m must be a GPT-2: learned positions, LayerNorms with biases, an MLP of
// tanh or exact GELU with biases, q/k/v and output biases, multi-head
// attention and no LM head bias. dir is created if missing; files in it
// are replaced whole (written atomically).
func SaveGPT2(dir string, m *model.Model) error {
	c := m.Config
	if err := gpt2Exportable(c); err != nil {
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
		values, err := model.Float64s(p.Value)
		if err != nil {
			return errors.Wrap(err, p.Name)
		}
		shape := []int(p.Value.Shape())
		if hf.transpose {
			t := make([]float64, len(values))
			kernels.Transpose(t, values, shape[0], shape[1])
			values, shape = t, []int{shape[1], shape[0]}
		}
		data := make([]byte, 4*len(values))
		for i, v := range values {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
		}
		tensors = append(tensors, safetensors.Tensor{Name: hf.param, DType: "F32", Shape: shape, Data: data})
	}
	config, err := json.MarshalIndent(gpt2ConfigJSON(c), "", "  ")
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

// gpt2Exportable refuses a config GPT2LMHeadModel cannot hold.
func gpt2Exportable(c model.Config) error {
	switch {
	case c.PositionKind() != model.PositionLearned:
		return errors.Errorf("model.position = %s; GPT-2 has learned positions", c.PositionKind())
	case !c.MLP || c.NormKind() != model.NormLayer || !c.NormHasBias():
		return errors.New("GPT-2's blocks have LayerNorms with biases and an MLP (model.mlp, norm, norm_bias)")
	case c.ActivationKind() != model.ActivationGELUTanh && c.ActivationKind() != model.ActivationGELU:
		return errors.Errorf("model.activation = %s; GPT-2's is gelu_tanh (or gelu)", c.ActivationKind())
	case !c.MLPBias.On() || !c.QKVBias || !c.OutBias || c.LMBias:
		return errors.New("GPT-2 has q/k/v, output and MLP biases and no LM head bias")
	case c.KVHeadCount() != c.Heads || c.KVLatent > 0 || c.Window > 0 || c.QKNorm:
		return errors.New("GPT-2 has full multi-head attention (no kv_heads, kv_latent, window or qk_norm)")
	}
	return nil
}

// gpt2ConfigJSON is the config.json of a GPT-2 of config c.
func gpt2ConfigJSON(c model.Config) map[string]any {
	activation := "gelu_new"
	if c.ActivationKind() == model.ActivationGELU {
		activation = "gelu"
	}
	return map[string]any{
		"architectures": []string{"GPT2LMHeadModel"}, "model_type": "gpt2",
		"vocab_size": c.Vocab, "n_positions": c.Context, "n_ctx": c.Context, "n_embd": c.DModel,
		"n_layer": c.Layers, "n_head": c.Heads, "n_inner": c.DFF, "activation_function": activation,
		"layer_norm_epsilon": c.Eps(), "tie_word_embeddings": c.TieEmbeddings,
	}
}
