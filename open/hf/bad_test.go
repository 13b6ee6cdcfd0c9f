package hf_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/internal/safetensors/sttest"
	"github.com/attnscope/attnscope/open/hf"
)

// copyVariant copies the fixture directory variant into a directory of
// the same name under the test's temporary directory, for a test to
// change.
func copyVariant(t *testing.T, variant string) string {
	t.Helper()
	src, dst := filepath.Join("testdata", variant), filepath.Join(t.TempDir(), variant)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// editJSON applies edit to the JSON object in the file at path.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal(readFile(t, path), &obj); err != nil {
		t.Fatal(err)
	}
	edit(obj)
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(raw))
}

func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	editJSON(t, filepath.Join(dir, hf.ConfigFile), edit)
}

func editWeightMap(t *testing.T, dir string, edit func(map[string]any)) {
	editJSON(t, filepath.Join(dir, hf.IndexFile), func(index map[string]any) { edit(index["weight_map"].(map[string]any)) })
}

// editHeader applies edit to the header of the safetensors file at path,
// its data unchanged.
func editHeader(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	writeFile(t, path, string(sttest.EditHeader(t, readFile(t, path), edit)))
}

// renameTensor renames a tensor in the header of the file at path.
func renameTensor(t *testing.T, path, from, to string) {
	editHeader(t, path, func(h map[string]any) { h[to] = h[from]; delete(h, from) })
}

// moveAndLink moves the file at path to target and leaves a symlink to it
// at path.
func moveAndLink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Rename(path, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// remove removes the files of dir named.
func remove(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

const (
	single = hf.WeightsFile
	shard1 = "model-00001-of-00003.safetensors"
	shard2 = "model-00002-of-00003.safetensors"
)

// TestLoadRefuses: every bad directory is refused with one line naming the
// file at fault (the directory itself for what no one file holds) and the
// problem.
func TestLoadRefuses(t *testing.T) {
	for _, c := range []struct {
		name    string
		variant string
		edit    func(t *testing.T, dir string)
		opts    hf.Options
		file    string // the file the message names, relative to the directory; "" is the directory
		want    string // what the message says
	}{
		{"no config.json", "distil", func(t *testing.T, d string) { remove(t, d, hf.ConfigFile) }, hf.Options{},
			hf.ConfigFile, "no such file; a Hugging Face model directory holds config.json and model.safetensors"},
		{"config.json a directory", "distil", func(t *testing.T, d string) {
			remove(t, d, hf.ConfigFile)
			if err := os.Mkdir(filepath.Join(d, hf.ConfigFile), 0o755); err != nil {
				t.Fatal(err)
			}
		}, hf.Options{}, hf.ConfigFile, "is a directory, not a regular file"},
		{"config.json not JSON", "distil", func(t *testing.T, d string) { writeFile(t, filepath.Join(d, hf.ConfigFile), `{"n_layer": 6,`) },
			hf.Options{}, hf.ConfigFile, "invalid JSON"},
		{"config.json key twice", "distil", func(t *testing.T, d string) {
			writeFile(t, filepath.Join(d, hf.ConfigFile), `{"model_type": "gpt2", "n_layer": 6, "n_layer": 2}`)
		}, hf.Options{}, hf.ConfigFile, `key "n_layer" appears twice`},
		{"unknown model_type", "distil", configSets("model_type", "llama"), hf.Options{},
			hf.ConfigFile, `architectures[0] = "GPT2LMHeadModel", model_type = "llama": not supported; supported: GPT2LMHeadModel (model_type gpt2)`},
		{"unknown architecture", "distil", configSets("architectures", []string{"GPT2ForSequenceClassification"}), hf.Options{},
			hf.ConfigFile, `architectures[0] = "GPT2ForSequenceClassification", model_type = "gpt2": not supported; supported: GPT2LMHeadModel`},
		{"no architectures", "distil", configDeletes("architectures"), hf.Options{},
			hf.ConfigFile, `architectures[0] = (missing), model_type = "gpt2": not supported`},
		{"activation relu", "distil", configSets("activation_function", "relu"), hf.Options{},
			hf.ConfigFile, `activation_function = "relu": not supported; supported: gelu, gelu_fast, gelu_new, gelu_pytorch_tanh`},
		{"scores unscaled", "distil", configSets("scale_attn_weights", false), hf.Options{},
			hf.ConfigFile, "scale_attn_weights = false: not supported"},
		{"scores scaled by layer", "distil", configSets("scale_attn_by_inverse_layer_idx", true), hf.Options{},
			hf.ConfigFile, "scale_attn_by_inverse_layer_idx = true: not supported"},
		{"cross-attention", "distil", configSets("add_cross_attention", true), hf.Options{},
			hf.ConfigFile, "add_cross_attention = true: not supported"},
		{"pruned heads", "distil", configSets("pruned_heads", map[string]any{"0": []int{1}}), hf.Options{},
			hf.ConfigFile, `pruned_heads = {"0":[1]}: want {}`},
		{"n_head a string", "distil", configSets("n_head", "four"), hf.Options{},
			hf.ConfigFile, `n_head = "four": want a positive integer`},
		{"n_layer fractional", "distil", configSets("n_layer", 6.5), hf.Options{},
			hf.ConfigFile, `n_layer = 6.5: want a positive integer`},
		{"n_embd not divisible by n_head", "distil", configSets("n_head", 5), hf.Options{},
			hf.ConfigFile, "n_embd = 16 is not divisible by n_head = 5"},
		{"layer_norm_epsilon out of range", "distil", configSets("layer_norm_epsilon", 2), hf.Options{},
			hf.ConfigFile, "layer_norm_epsilon = 2: want a number in (0, 1)"},
		{"n_embd disagrees with the weights", "distil", configSets("n_embd", 32), hf.Options{},
			single, `tensor "wte.weight" has shape [96 16], want [96 32] (config.json has vocab_size 96, n_positions 32, n_embd 32`},
		{"n_inner disagrees with the weights", "distil", configSets("n_inner", nil), hf.Options{},
			single, `tensor "h.0.mlp.c_fc.weight" has shape [16 48], want [16 64]`},
		{"n_layer above the weights'", "distil", configSets("n_layer", 7), hf.Options{},
			single, `holds no tensor "h.6.ln_1.weight"`},
		{"n_layer below the weights'", "prefixed", configSets("n_layer", 1), hf.Options{},
			single, `unexpected tensor "transformer.h.1.`},
		{"n_layer far above the tensors", "distil", configSets("n_layer", 1024), hf.Options{MaxBytes: 1e30},
			single, "holds 76 tensors, too few for the 1024 layers of config.json"},
		{"n_layer past the bound", "distil", configSets("n_layer", 1<<30), hf.Options{MaxBytes: 1e30},
			hf.ConfigFile, "n_layer = 1073741824: want a positive integer of at most 1024 (the deepest models have about 128 layers)"},
		{"n_head past the bound", "distil", configSets("n_head", 2048), hf.Options{MaxBytes: 1e30},
			hf.ConfigFile, "n_head = 2048: want a positive integer of at most 1024"},
		{"an unknown tensor", "distil", func(t *testing.T, d string) { renameTensor(t, filepath.Join(d, single), "ln_f.bias", "ln_f.beta") }, hf.Options{},
			single, `unexpected tensor "ln_f.beta": not a parameter or buffer of the GPT2LMHeadModel its config.json describes`},
		{"a parameter twice", "prefixed", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "lm_head.weight", "wte.weight")
		}, hf.Options{},
			single, `tensor "transformer.wte.weight" and "wte.weight" in`},
		{"a tied head of another shape", "prefixed", func(t *testing.T, d string) {
			editHeader(t, filepath.Join(d, single), func(h map[string]any) { h["lm_head.weight"].(map[string]any)["shape"] = []int{32, 96} })
		}, hf.Options{}, single, `tensor "lm_head.weight" has shape [32 96]; tied to the token embedding, it must be [96 32]`},
		{"an integer dtype", "prefixed", func(t *testing.T, d string) {
			editHeader(t, filepath.Join(d, single), func(h map[string]any) { h["transformer.ln_f.bias"].(map[string]any)["dtype"] = "I32" })
		}, hf.Options{}, single, `tensor "transformer.ln_f.bias" has dtype I32; want F32, F16 or BF16`},
		{"a weight not finite", "distil", func(t *testing.T, d string) {
			setHalf(t, filepath.Join(d, single), "h.3.attn.c_proj.weight", 17, 0x7c00)
		}, hf.Options{},
			single, `tensor "h.3.attn.c_proj.weight": value +Inf at index [1 1] is not finite`},
		{"a truncated file", "distil", func(t *testing.T, d string) {
			path := filepath.Join(d, single)
			raw := readFile(t, path)
			writeFile(t, path, string(raw[:len(raw)-100]))
		}, hf.Options{}, single, "run past the end of the"},
		{"weights over MaxBytes", "distil", nil, hf.Options{MaxBytes: 50_000},
			"", "the model's 18592 weights take 72.6 KiB in float32, more than the 48.8 KiB limit"},
		{"pytorch_model.bin only", "distil", func(t *testing.T, d string) {
			remove(t, d, single)
			writeFile(t, filepath.Join(d, hf.PickleFile), "PK")
		}, hf.Options{}, "", "holds pytorch_model.bin but no model.safetensors; a pickle is not read: convert it"},
		{"no weights", "distil", func(t *testing.T, d string) { remove(t, d, single) }, hf.Options{},
			"", "holds no model.safetensors or model.safetensors.index.json"},
		{"config.json a link out", "distil", linkOut(hf.ConfigFile), hf.Options{},
			hf.ConfigFile, "is a symlink to "},
		{"model.safetensors a link out", "distil", linkOut(single), hf.Options{},
			single, "outside"},
		{"a tokenizer file a link out", "distil", func(t *testing.T, d string) {
			writeFile(t, filepath.Join(d, "vocab.json"), "{}")
			linkOut("vocab.json")(t, d)
		}, hf.Options{}, "vocab.json", "is a symlink to "},
		{"a shard a link out", "sharded", linkOut(shard2), hf.Options{},
			shard2, "is a symlink to "},
		{"a missing shard", "sharded", func(t *testing.T, d string) { remove(t, d, shard2) }, hf.Options{},
			shard2, "no such file (a shard model.safetensors.index.json lists)"},
		{"a shard name with a separator", "sharded", shardNamed("../" + shard1), hf.Options{},
			hf.IndexFile, `is placed in "../model-00001-of-00003.safetensors"; a shard must be a file name in the directory`},
		{"an absolute shard name", "sharded", shardNamed("/etc/passwd"), hf.Options{},
			hf.IndexFile, `is placed in "/etc/passwd"; a shard must be a file name`},
		{"a shard named ..", "sharded", shardNamed(".."), hf.Options{},
			hf.IndexFile, `is placed in ".."; a shard must be a file name`},
		{"a tensor the index lists its shard lacks", "sharded", func(t *testing.T, d string) {
			editWeightMap(t, d, func(m map[string]any) { m["transformer.h.9.ln_1.weight"] = shard1 })
		}, hf.Options{}, shard1, `holds no tensor "transformer.h.9.ln_1.weight", which model.safetensors.index.json places there`},
		{"a tensor the index does not list", "sharded", func(t *testing.T, d string) {
			editWeightMap(t, d, func(m map[string]any) { delete(m, "transformer.h.0.attn.c_attn.bias") })
		}, hf.Options{}, shard1, `holds tensor "transformer.h.0.attn.c_attn.bias", which model.safetensors.index.json does not list`},
		{"a tensor the index places in another shard", "sharded", func(t *testing.T, d string) {
			editWeightMap(t, d, func(m map[string]any) { m["transformer.h.0.attn.c_attn.bias"] = shard2 })
		}, hf.Options{}, shard1, `holds tensor "transformer.h.0.attn.c_attn.bias", which model.safetensors.index.json places in model-00002-of-00003.safetensors`},
		{"rope_scaling dynamic", "llama", configSets("rope_scaling", map[string]any{"rope_type": "dynamic", "factor": 8}), hf.Options{},
			hf.ConfigFile, `rope_scaling.rope_type = "dynamic": not built; built: default, linear, llama3`},
		{"rope_scaling of an old file", "qwen2", configSets("rope_scaling", map[string]any{"type": "longrope", "factor": 2}), hf.Options{},
			hf.ConfigFile, `rope_scaling.type = "longrope": not built`},
		{"rope_parameters yarn", "mistral", configSets("rope_parameters", map[string]any{"rope_type": "yarn", "rope_theta": 1e4}), hf.Options{},
			hf.ConfigFile, `rope_parameters.rope_type = "yarn": not built`},
		{"rope_parameters per layer type", "mistral", configSets("rope_parameters", map[string]any{"full_attention": map[string]any{"rope_type": "default"}}), hf.Options{},
			hf.ConfigFile, `rope_parameters.full_attention: rotary parameters per layer type are not built`},
		{"rope_scaling a number", "llama", configSets("rope_scaling", 2), hf.Options{},
			hf.ConfigFile, `rope_scaling = 2: want null or an object`},
		{"partial rotary", "llama", configSets("partial_rotary_factor", 0.5), hf.Options{},
			hf.ConfigFile, `partial_rotary_factor = 0.5: not built`},
		{"rope_theta 1", "llama", configSets("rope_theta", 1), hf.Options{},
			hf.ConfigFile, `rope_theta = 1: want a number > 1`},
		{"kv heads not dividing heads", "llama", configSets("num_key_value_heads", 3), hf.Options{},
			hf.ConfigFile, `num_key_value_heads = 3 does not divide num_attention_heads = 4`},
		{"hidden_size not divisible by heads", "qwen2", configSets("num_attention_heads", 5), hf.Options{},
			hf.ConfigFile, `hidden_size = 32 is not divisible by num_attention_heads = 5`},
		{"head_dim disagrees with the weights", "biased", configSets("head_dim", 16), hf.Options{},
			single, `has shape [32 32], want [64 32] (config.json has vocab_size 96, hidden_size 32, intermediate_size 40, num_hidden_layers 2, num_attention_heads 4, num_key_value_heads 4, head_dim 16)`},
		{"hidden_act gelu", "mistral", configSets("hidden_act", "gelu"), hf.Options{},
			hf.ConfigFile, `hidden_act = "gelu": not supported; supported: silu`},
		{"rms_norm_eps 0", "llama", configSets("rms_norm_eps", 0), hf.Options{},
			hf.ConfigFile, `rms_norm_eps = 0: want a number in (0, 1)`},
		{"sliding_window 0", "mistral", configSets("sliding_window", 0), hf.Options{},
			hf.ConfigFile, `sliding_window = 0: want a positive integer`},
		{"qwen2 sliding layers without a window", "qwen2", configSets("layer_types", []string{"sliding_attention", "sliding_attention"}), hf.Options{},
			hf.ConfigFile, `layer_types = ["sliding_attention","sliding_attention"] names sliding_attention layers, but use_sliding_window = false`},
		{"qwen2 an unknown layer type", "qwen2", configSets("layer_types", []string{"full_attention", "chunked_attention"}), hf.Options{},
			hf.ConfigFile, `layer_types: "chunked_attention": not supported; supported: full_attention, sliding_attention`},
		{"intermediate_size disagrees with the weights", "llama", configSets("intermediate_size", 48), hf.Options{},
			single, `tensor "model.layers.0.mlp.gate_proj.weight" has shape [40 32], want [48 32] (config.json has vocab_size 96, hidden_size 32, intermediate_size 48`},
		{"num_key_value_heads disagrees with the weights", "llama", configDeletes("num_key_value_heads"), hf.Options{},
			single, `tensor "model.layers.0.self_attn.k_proj.weight" has shape [16 32], want [32 32]`},
		{"a q/k/v bias missing", "qwen2", func(t *testing.T, d string) {
			renameTensor(t, filepath.Join(d, single), "model.layers.1.self_attn.k_proj.bias", "model.layers.1.self_attn.rotary_emb.inv_freq")
		}, hf.Options{},
			single, `holds no tensor "model.layers.1.self_attn.k_proj.bias"`},
		{"an untied head missing", "biased", configSets("tie_word_embeddings", false), hf.Options{},
			single, `holds no tensor "lm_head.weight"`},
		{"Qwen2ForCausalLM of model_type llama", "qwen2", configSets("model_type", "llama"), hf.Options{},
			hf.ConfigFile, `architectures[0] = "Qwen2ForCausalLM", model_type = "llama": not supported`},
		{"a bias the config does not ask for", "biased", configSets("attention_bias", false), hf.Options{},
			single, `unexpected tensor "model.layers.`},
		{"a tensor twice in the index", "sharded", func(t *testing.T, d string) {
			path := filepath.Join(d, hf.IndexFile)
			writeFile(t, path, strings.Replace(string(readFile(t, path)), `"weight_map": {`,
				`"weight_map": {"transformer.wte.weight": "`+shard1+`",`, 1))
		}, hf.Options{}, hf.IndexFile, `weight_map: key "transformer.wte.weight" appears twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyVariant(t, c.variant)
			if c.edit != nil {
				c.edit(t, dir)
			}
			_, err := hf.Load(dir, c.opts)
			if err == nil {
				t.Fatal("loaded")
			}
			text := err.Error()
			file := filepath.Join(dir, c.file)
			if strings.Contains(text, "\n") || !strings.HasPrefix(text, file+":") || !strings.Contains(text, c.want) {
				t.Errorf("error %q\nwant one line starting %q and saying %q", text, file+":", c.want)
			}
		})
	}
}

// configSets sets key of config.json to value (nil: null).
func configSets(key string, value any) func(*testing.T, string) {
	return func(t *testing.T, dir string) { editConfig(t, dir, func(c map[string]any) { c[key] = value }) }
}

// configEdits sets each key of config.json to its value (nil: null).
func configEdits(values map[string]any) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		editConfig(t, dir, func(c map[string]any) {
			for k, v := range values {
				c[k] = v
			}
		})
	}
}

func configDeletes(key string) func(*testing.T, string) {
	return func(t *testing.T, dir string) { editConfig(t, dir, func(c map[string]any) { delete(c, key) }) }
}

// linkOut moves the file called name out of the directory and leaves a
// symlink to it.
func linkOut(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		moveAndLink(t, filepath.Join(dir, name), filepath.Join(t.TempDir(), name))
	}
}

// shardNamed places a tensor of the index in shard.
func shardNamed(shard string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		editWeightMap(t, dir, func(m map[string]any) { m["transformer.h.0.attn.c_attn.bias"] = shard })
	}
}

// setHalf sets element i of the F16 tensor name in the file at path to
// the half-precision bits h.
func setHalf(t *testing.T, path, name string, i int, h uint16) {
	t.Helper()
	header, data := sttest.Split(t, readFile(t, path))
	offsets := header[name].(map[string]any)["data_offsets"].([]any)
	at := int(offsets[0].(float64)) + 2*i
	if at+2 > int(offsets[1].(float64)) {
		t.Fatalf("%s has no element %d", name, i)
	}
	data[at], data[at+1] = byte(h), byte(h>>8)
	writeFile(t, path, string(sttest.Join(t, header, data)))
}
