package hf

import (
	"fmt"

	"github.com/pkg/errors"

	"github.com/attnscope/attnscope/model"
)

// A Gemma3ForConditionalGeneration directory (gemma-3-4b and larger) holds
// the text model, Gemma3ForCausalLM's, beside a SigLIP vision tower and
// its projector into the text model's embeddings. The text model is read:
// its config is text_config (Gemma3TextConfig's defaults for the keys it
// leaves out, as the hub's files leave out most), its tensors are under
// "language_model.", and the vision tower's and projector's, named from
// vision_config's layer count, are skipped unread. Images are not built.

// visionLayers is SiglipVisionConfig's num_hidden_layers when
// vision_config leaves it out.
const visionLayers = 12

// gemma3TextTower is the architecture of the text model of a
// Gemma3ForConditionalGeneration's config.json, and the keys of that text
// model's config: text_config's, with the bos_token_id and eos_token_id
// of the top level over them (the hub's files give eos_token_id there).
func gemma3TextTower(a architecture, keys configKeys) (architecture, configKeys, error) {
	text, err := keys.dict("text_config")
	if err != nil {
		return architecture{}, nil, err
	}
	if kind, err := text.str("model_type", "gemma3_text"); err != nil || kind != "gemma3_text" {
		return architecture{}, nil, errors.Errorf("text_config.model_type = %s: want gemma3_text", shown(text["model_type"]))
	}
	vision, err := keys.dict("vision_config")
	if err != nil {
		return architecture{}, nil, err
	}
	layers, err := vision.layerCount("num_hidden_layers", visionLayers)
	if err != nil {
		return architecture{}, nil, errors.WithMessage(err, "vision_config")
	}
	for _, key := range []string{"bos_token_id", "eos_token_id"} {
		if raw, ok := keys[key]; ok {
			text[key] = raw
		}
	}
	a.config = func(k configKeys) (model.Config, error) {
		cfg, err := gemma3Defaults.config(k)
		return cfg, errors.WithMessage(err, "text_config")
	}
	a.tensors = func(cfg model.Config) map[string]target { return gemma3TowerTensors(cfg, layers) }
	return a, text, nil
}

// gemma3TowerTensors lists the names a Gemma3ForConditionalGeneration's
// files may hold: the text model's as Gemma3ForCausalLM's under
// "language_model.", and the vision tower's and projector's, skipped.
func gemma3TowerTensors(cfg model.Config, visionLayers int) map[string]target {
	names := map[string]target{}
	for name, t := range gemmaTensors(cfg) {
		names["language_model."+name] = t
	}
	tower := "vision_tower.vision_model."
	for _, name := range []string{
		"multi_modal_projector.mm_input_projection_weight", "multi_modal_projector.mm_soft_emb_norm.weight",
		tower + "embeddings.patch_embedding.weight", tower + "embeddings.patch_embedding.bias",
		tower + "embeddings.position_embedding.weight", tower + "post_layernorm.weight", tower + "post_layernorm.bias",
	} {
		names[name] = target{}
	}
	for i := range visionLayers {
		layer := fmt.Sprintf("%sencoder.layers.%d.", tower, i)
		for _, part := range []string{"layer_norm1", "layer_norm2", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
			"self_attn.out_proj", "mlp.fc1", "mlp.fc2"} {
			names[layer+part+".weight"], names[layer+part+".bias"] = target{}, target{}
		}
	}
	return names
}
