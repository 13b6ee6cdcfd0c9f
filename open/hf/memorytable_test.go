package hf

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/internal/msg"
	"github.com/attnscope/attnscope/model"
)

// tableModels are the config.json keys that set the shapes of the models
// docs/pretrained.md's memory table covers, as the hub's files give them
// (Llama 3's rope_scaling left out: it changes no shape), and the dtype
// their weights are stored in there.
var tableModels = []struct {
	name, dtype, config string
}{
	{"GPT-2 small", "F32", `{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12}`},
	{"GPT-2 XL", "F32", `{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 1600, "n_layer": 48, "n_head": 25}`},
	{"Llama 3.2 1B", "BF16", llamaConfig(2048, 8192, 32, 16, 64, true)},
	{"Llama 3.2 3B", "BF16", llamaConfig(3072, 8192, 24, 28, 128, true)},
	{"Llama 3.1 8B", "BF16", llamaConfig(4096, 14336, 32, 32, 128, false)},
	{"Qwen 2.5 7B", "BF16", `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
		"num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "max_position_embeddings": 131072, "max_window_layers": 28,
		"rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 131072, "use_sliding_window": false, "tie_word_embeddings": false}`},
}

func llamaConfig(hidden, inner, heads, layers, headDim int, tied bool) string {
	return fmt.Sprintf(`{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256, "hidden_size": %d, "intermediate_size": %d,
		"num_attention_heads": %d, "num_hidden_layers": %d, "num_key_value_heads": 8, "head_dim": %d, "max_position_embeddings": 131072,
		"rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": %t}`,
		hidden, inner, heads, layers, headDim, tied)
}

// tablePositions is the sequence length of the table's activations.
const tablePositions = 256

// memoryRow is a model's row of the table: its weights as Load with Map
// holds them (a BF16 or F16 matrix mapped in its dtype, everything else
// read into float32) and, without those weights, the estimates of
// model.Config.InferenceBytes (one forward of tablePositions tokens), of
// inspect's bound on a sequence of them (report's checkSequenceMemory:
// ViewBytes of one sequence with its maps and 20 bytes per attention
// weight) and of
// model.Model.DecodeBytes (one row decoded to tablePositions positions).
func memoryRow(t *testing.T, name, dtype, config string) string {
	t.Helper()
	_, cfg, _, err := parseModelConfig([]byte(config))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	mapped, read := 0.0, 0.0
	for _, spec := range cfg.ParamSpecs() {
		n := 1.0
		for _, d := range spec.Shape {
			n *= float64(d)
		}
		if dtype != "F32" && len(spec.Shape) == 2 {
			mapped += n
		} else {
			read += n
		}
	}
	cfg.MappedWeights = mapped
	cfg.Context = tablePositions
	forward := cfg.InferenceBytes(1) - 4*read
	maps := float64(cfg.Layers) * float64(cfg.Heads) * tablePositions * tablePositions
	inspect := cfg.ViewBytes(1, true) - 4*read + 20*maps
	decode := (&model.Model{Config: cfg, Dtype: tensor.Float32}).DecodeBytes(1, tablePositions) - 4*read
	return fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", name, dtype, msg.Bytes(2*mapped), msg.Bytes(4*read),
		msg.Bytes(forward), msg.Bytes(inspect), msg.Bytes(decode))
}

// TestMemoryTableInDocs: docs/pretrained.md's memory table is what the
// lab's estimators give for each model's shape, row by row.
func TestMemoryTableInDocs(t *testing.T) {
	raw, err := os.ReadFile("../../docs/pretrained.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tableModels {
		row := memoryRow(t, m.name, m.dtype, m.config)
		if !strings.Contains(string(raw), row+"\n") {
			t.Errorf("docs/pretrained.md lacks the row\n%s", row)
		}
	}
}
