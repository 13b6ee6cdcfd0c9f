package hf

import (
	"fmt"
	"strings"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// architecture is one family Load opens: how its config.json becomes a
// model.Config, and what each tensor name its files may hold is.
type architecture struct {
	class     string // architectures[0] in config.json
	modelType string // model_type in config.json
	config    func(configKeys) (model.Config, error)
	// tensors lists every name a file of this config may hold; a name
	// not listed is refused. Called only once cfg.Layers is known to be
	// no more than the files' tensor count.
	tensors func(cfg model.Config) map[string]target
	// sizes names the config keys behind the shapes, for a shape error.
	sizes func(cfg model.Config) string
	// bos and eos are the config class's bos_token_id and eos_token_id,
	// -1 for none.
	bos, eos int
	// normaliser: the embeddings are multiplied by sqrt(hidden_size) in
	// the model's dtype (Gemma's), which Load takes to be the dtype of the
	// file's embedding.
	normaliser bool
	// textTower, for a model of more than text whose config.json nests
	// the text model's (text_config), is the architecture of that text
	// model within the files, and the keys of its config.
	textTower func(a architecture, keys configKeys) (architecture, configKeys, error)
}

// target is what one tensor of a file is.
type target struct {
	// param is the project's parameter the tensor holds; "" for a buffer
	// that is ignored.
	param string
	// transpose: stored (in, out) as GPT-2's Conv1D, the transpose of the
	// project's (out, in).
	transpose bool
	// ignoredShape, for an ignored tensor, is the only shape it may have
	// (a tied head must be the embedding's shape); nil takes any.
	ignoredShape []int
	// part, for a tensor that fills only some rows of its parameter
	// (Llama's q_proj, k_proj and v_proj, the project's fused qkv), is
	// those rows; the zero value is the whole parameter.
	part rows
	// split, for a tensor whose consecutive row ranges fill rows of one
	// or more parameters (GPT-NeoX's query_key_value, head by head;
	// Phi-3's gate_up_proj), is those rows in the tensor's order, each
	// with its part's count set; param is then "".
	split []target
}

// ignored reports whether the tensor is a buffer that is not read.
func (t target) ignored() bool { return t.param == "" && t.split == nil }

// slots are the slots the tensor fills: its own, or each of its split's.
func (t target) slots() []slot {
	if t.split == nil {
		return []slot{t.slot()}
	}
	out := make([]slot, len(t.split))
	for i, p := range t.split {
		out[i] = p.slot()
	}
	return out
}

// rows are count rows of a parameter from row first (its first
// dimension's), for a tensor holding part of it; count 0 is all of it.
type rows struct{ first, count int }

// slot is where a tensor goes: its parameter, and the first row it fills.
type slot struct {
	param string
	first int
}

func (t target) slot() slot { return slot{t.param, t.part.first} }

// architectures are the families Load opens, in the order messages name
// them.
var architectures = []architecture{
	{class: "GPT2LMHeadModel", modelType: "gpt2", config: gpt2Config, tensors: gpt2Tensors, sizes: gpt2Sizes, bos: 50256, eos: 50256},
	{class: "LlamaForCausalLM", modelType: "llama", config: llamaDefaults.config, tensors: llamaTensors, sizes: llamaSizes, bos: 1, eos: 2},
	{class: "MistralForCausalLM", modelType: "mistral", config: mistralDefaults.config, tensors: llamaTensors, sizes: llamaSizes, bos: 1, eos: 2},
	{class: "Qwen2ForCausalLM", modelType: "qwen2", config: qwen2Defaults.config, tensors: llamaTensors, sizes: llamaSizes, bos: -1, eos: -1},
	{class: "Qwen3ForCausalLM", modelType: "qwen3", config: qwen3Defaults.config, tensors: llamaTensors, sizes: llamaSizes, bos: -1, eos: -1},
	{class: "Gemma2ForCausalLM", modelType: "gemma2", config: gemma2Defaults.config, tensors: gemmaTensors, sizes: llamaSizes, bos: 2, eos: 1, normaliser: true},
	{class: "Gemma3ForCausalLM", modelType: "gemma3_text", config: gemma3Defaults.config, tensors: gemmaTensors, sizes: llamaSizes, bos: 2, eos: 1, normaliser: true},
	{class: "Gemma3ForConditionalGeneration", modelType: "gemma3", textTower: gemma3TextTower, sizes: llamaSizes, bos: 2, eos: 1, normaliser: true},
	{class: "GPTNeoXForCausalLM", modelType: "gpt_neox", config: neoxConfig, tensors: neoxTensors, sizes: neoxSizes, bos: 0, eos: 2},
	{class: "GPTNeoForCausalLM", modelType: "gpt_neo", config: gptNeoConfig, tensors: gptNeoTensors, sizes: gptNeoSizes, bos: 50256, eos: 50256},
	{class: "Phi3ForCausalLM", modelType: "phi3", config: phi3Config, tensors: phi3Tensors, sizes: llamaSizes, bos: 1, eos: 32000},
	{class: "Olmo2ForCausalLM", modelType: "olmo2", config: olmo2Config, tensors: olmo2Tensors, sizes: llamaSizes, bos: -1, eos: 50279},
}

// findArchitecture is the row of the architectures table config.json
// names.
func findArchitecture(keys configKeys) (architecture, error) {
	class, err := keys.firstArchitecture()
	if err != nil {
		return architecture{}, err
	}
	modelType, err := keys.str("model_type", "")
	if err != nil {
		return architecture{}, err
	}
	for _, a := range architectures {
		if a.class == class && a.modelType == modelType {
			return a, nil
		}
	}
	supported := make([]string, len(architectures))
	for i, a := range architectures {
		supported[i] = fmt.Sprintf("%s (model_type %s)", a.class, a.modelType)
	}
	return architecture{}, errors.Errorf("architectures[0] = %s, model_type = %s: not supported; supported: %s",
		named(class), named(modelType), strings.Join(supported, ", "))
}

// named quotes a name from a file, or says it is missing.
func named(s string) string {
	if s == "" {
		return "(missing)"
	}
	return msg.Quote(s)
}
