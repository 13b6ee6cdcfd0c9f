package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// modernFixtures are open/hf's fixtures of the architectures of issue 45
// it reads, with a part of the model card each must show.
var modernFixtures = []struct {
	variant, source, card string
	layers, heads         int
	global                []int // the layers that see every earlier token, when the others have a window
}{
	{"llama3", "LlamaForCausalLM", "llama3 rope scaling x8", 2, 2, nil},
	{"llama_linear", "LlamaForCausalLM", "linear rope scaling x4, head_dim 12", 2, 2, nil},
	{"qwen3", "Qwen3ForCausalLM", "QK-norm", 2, 2, nil},
	{"qwen3_bf16", "Qwen3ForCausalLM", "local/global 1:1 with window 4 (layer 0 global)", 2, 2, []int{0}},
	{"gemma2", "Gemma2ForCausalLM", "soft-capped logits at 3", 2, 4, []int{1}},
	{"gemma2_bf16", "Gemma2ForCausalLM", "embeddings scaled by 4.906", 3, 4, []int{1}},
	{"gemma3", "Gemma3ForCausalLM", "rope positions (base 1000000 global, 10000 local)", 3, 2, []int{2}},
	{"gemma3_types", "Gemma3ForCausalLM", "local/global 2:1 with window 4 (layer 0 global)", 3, 2, []int{0}},
	{"gemma3_vlm", "Gemma3ForConditionalGeneration", "linear rope scaling x8", 3, 2, []int{2}},
	{"neox", "GPTNeoXForCausalLM", "rotary on 2 of 8 channels", 2, 3, nil},
	{"pythia", "GPTNeoXForCausalLM", "parallel residual", 2, 3, nil},
	{"tinystories", "GPTNeoForCausalLM", "local/global 1:1 with window 4 (layer 0 global), unscaled attention", 2, 3, []int{0}},
	{"phi3", "Phi3ForCausalLM", "rotary on 4 of 8 channels, 2 kv heads (grouped-query), head_dim 8, window 4", 2, 4, nil},
	{"olmo2", "Olmo2ForCausalLM", "post-norm blocks with MLP (RMSNorm, norm eps 1e-06, SwiGLU, no MLP biases), QK-norm over the projection", 2, 3, nil},
}

// TestModernArchitectureViews: each fixture of Llama 3.x, Qwen 3, Gemma 2
// and 3, GPT-NeoX, GPT-Neo, Phi-3 and OLMo 2 opens in every view (tokens as ids: the fixtures have no tokenizer
// files): -summary names the architecture and the parts of the model card;
// -tokens with -circuits and -ablate shows every section and marks each
// heatmap of a local/global model local or global; -json and -html carry
// every head.
func TestModernArchitectureViews(t *testing.T) {
	for _, c := range modernFixtures {
		dir := filepath.Join("..", "..", "open", "hf", "testdata", c.variant)
		out := prose(string(runNoted(t, "-checkpoint", dir, "-summary", "-examples", "2", "-color", "never")))
		if !strings.Contains(out, "Hugging Face "+c.source+", tokenizer none (64 token ids)") || !strings.Contains(out, c.card) {
			t.Errorf("%s -summary: want %q and %q:\n%s", c.variant, c.source, c.card, out)
		}
		out = string(runNoted(t, "-checkpoint", dir, "-tokens", llamaTokens, "-circuits", "-ablate", "-examples", "2", "-layer", "all", "-color", "never"))
		for _, want := range []string{"direct logit attribution", "logit lens", "composition", "Δloss", "heatmaps: "} {
			if !strings.Contains(out, want) {
				t.Errorf("%s -circuits -ablate lacks %q:\n%s", c.variant, want, out)
			}
		}
		for l := range c.layers {
			kind := ""
			if c.global != nil {
				kind = " (local)"
				if slices.Contains(c.global, l) {
					kind = " (global)"
				}
			}
			if title := fmt.Sprintf("layer %d head 0%s", l, kind); !strings.Contains(out, title) {
				t.Errorf("%s: no heatmap titled %q:\n%s", c.variant, title, out)
			}
		}
		page := filepath.Join(t.TempDir(), "page.html")
		var doc struct {
			Heads [][]any `json:"heads"`
		}
		if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-tokens", llamaTokens, "-examples", "2", "-json", "-html", page), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Heads) != c.layers || len(doc.Heads[0]) != c.heads {
			t.Errorf("%s -json: %d layers of heads, want %d x %d", c.variant, len(doc.Heads), c.layers, c.heads)
		}
		if info, err := os.Stat(page); err != nil || info.Size() == 0 {
			t.Errorf("%s -html wrote nothing: %v", c.variant, err)
		}
	}
}
