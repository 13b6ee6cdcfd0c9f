package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestFusedArchitectureViews: the GPT-NeoX, GPT-Neo, Phi-3 and OLMo 2
// fixtures of open/hf (random weights, no tokenizer files) open in every
// view: -summary names the architecture and the parts of its block (the
// model card), the default view with -circuits and -ablate draws every
// section, and -json carries the attention family; GPT-Neo's local layer
// is marked in its heatmaps' titles.
func TestFusedArchitectureViews(t *testing.T) {
	for _, c := range []struct {
		variant, source string
		card            []string // words of -summary's model card
	}{
		{"pythia", "Hugging Face GPTNeoXForCausalLM", []string{"parallel residual", "rotary on 4 of 8 channels", "exact GELU"}},
		{"neox", "Hugging Face GPTNeoXForCausalLM", []string{"rotary on 2 of 8 channels", "tied embeddings"}},
		{"tinystories", "Hugging Face GPTNeoForCausalLM", []string{"local/global 1:1", "unscaled attention", "window 4"}},
		{"phi3", "Hugging Face Phi3ForCausalLM", []string{"head_dim 8", "rotary on 4 of 8 channels", "2 kv heads", "window 4"}},
		{"olmo2", "Hugging Face Olmo2ForCausalLM", []string{"post-norm blocks", "QK-norm over the projection", "1 kv head"}},
	} {
		dir := filepath.Join("..", "..", "open", "hf", "testdata", c.variant)
		summary := prose(string(runNoted(t, "-checkpoint", dir, "-summary", "-examples", "2", "-color", "never")))
		for _, want := range append([]string{c.source + ", tokenizer none (64 token ids)"}, c.card...) {
			if !strings.Contains(summary, want) {
				t.Errorf("%s -summary lacks %q:\n%s", c.variant, want, summary)
			}
		}
		out := string(runNoted(t, "-checkpoint", dir, "-tokens", "1 5 6 7 5 6 7", "-circuits", "-ablate", "-examples", "2", "-color", "never"))
		for _, want := range []string{"token       <1>  <5>  <6>  <7>  <5>", "direct logit attribution", "logit lens", "composition", "Δloss", "layer 1 head 2"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s -circuits -ablate lacks %q:\n%s", c.variant, want, out)
			}
		}
		if local := strings.Contains(out, "layer 1 head 0 (local)"); local != (c.variant == "tinystories") {
			t.Errorf("%s: layer 1's heatmaps marked local: %t", c.variant, local)
		}
		var doc struct {
			Family string `json:"family"`
		}
		if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-tokens", "1 5 6 7 5 6 7", "-examples", "2", "-json"), &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(summary, doc.Family) {
			t.Errorf("%s -json: family %q, not the summary's", c.variant, doc.Family)
		}
	}
}
