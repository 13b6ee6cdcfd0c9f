package render

import (
	"bytes"
	"strings"
	"testing"
)

// TestHeadingIsTheTerminals: the sentences the page takes from render
// (Heading, Model.Description, RolesNote) are the terminal view's first
// three lines, for a model trained elsewhere with -text (no step; roles on
// the text, at every position), a Llama's blocks, and the lab's checkpoint.
func TestHeadingIsTheTerminals(t *testing.T) {
	llama := Model{Layers: 2, Heads: 4, DModel: 32, MLP: true, Blocks: "pre-RMSNorm blocks with MLP (SwiGLU, no MLP biases)", Family: "rope positions (base 1000)", KVHeads: 2}
	for _, c := range []struct {
		v                    Inspect
		heading, model, note string
	}{
		{Inspect{Checkpoint: "gpt2\x1b", Source: "Hugging Face GPT2LMHeadModel", Tokenizer: "GPT-2", Model: Model{Layers: 12, Heads: 12, DModel: 768, Blocks: "pre-LN blocks with MLP"},
			RolesOnSequence: true, RolesOnGiven: true, RolesEveryRow: true, Task: "repeated-tokens", Samples: 8, Seed: 1},
			`model gpt2\x1b: Hugging Face GPT2LMHeadModel, tokenizer GPT-2`, "12 layers x 12 heads, d_model 768, pre-LN blocks with MLP",
			"roles scored on the text given (without -text or -tokens they pool over repeated random tokens), at every position"},
		{Inspect{Checkpoint: "llama", Source: "Hugging Face LlamaForCausalLM", Tokenizer: "none", Model: llama, Task: "repeated-tokens", Samples: 2, Seed: 1},
			"model llama: Hugging Face LlamaForCausalLM, tokenizer none",
			"2 layers x 4 heads, d_model 32, pre-RMSNorm blocks with MLP (SwiGLU, no MLP biases), rope positions (base 1000)",
			"roles pooled over 2 examples of repeated-tokens (seed 1), at the positions the task scores"},
		{Inspect{Checkpoint: "runs/copy", Step: 400, Model: Model{Layers: 1, Heads: 1, DModel: 16, Blocks: "attention-only blocks"}, Task: "copy", Samples: 64, Seed: 3},
			"checkpoint runs/copy (step 400)", "1 layer x 1 head, d_model 16, attention-only blocks",
			"roles pooled over 64 examples of copy (seed 3), at the positions the task scores"},
	} {
		if got := c.v.Heading(); got != c.heading {
			t.Errorf("Heading %q, want %q", got, c.heading)
		}
		if got := c.v.Model.Description(); got != c.model {
			t.Errorf("Description %q, want %q", got, c.model)
		}
		if got := c.v.RolesNote(); got != c.note {
			t.Errorf("RolesNote %q, want %q", got, c.note)
		}
		c.v.Summary = true
		var out bytes.Buffer
		if err := WriteInspect(&out, c.v, Plain, 1000); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(out.String(), "\n")
		if len(lines) < 3 || lines[0] != c.v.Heading() || lines[1] != "model: "+c.v.Model.Description() || lines[2] != "heads: "+c.v.RolesNote() {
			t.Errorf("the terminal's first lines are %q, want the heading, the description and the roles' note", lines[:min(3, len(lines))])
		}
	}
}
