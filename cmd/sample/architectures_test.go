package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/tokenizer"
)

// newArchitectures are open/hf's fixture directories of the architectures
// of issue 45, one or more a class: Llama 3.x's rope scaling (llama3 and
// linear), Qwen 3, Gemma 2 and Gemma 3 (F32 and BF16, layer_types, and the
// text model of a vision directory), GPT-NeoX (sequential and Pythia's
// parallel residual), GPT-Neo, Phi-3 and OLMo 2.
var newArchitectures = []string{
	"llama3", "llama_linear", "qwen3", "qwen3_bf16", "gemma2", "gemma2_bf16", "gemma3", "gemma3_types", "gemma3_vlm",
	"neox", "pythia", "tinystories", "phi3", "olmo2",
}

// TestEachArchitectureWrites: sample notes each new architecture's model
// card once on stderr, and continues -tokens greedily with the KV cache,
// on both paths, and without it,
// writing what generate writes from full forwards of the whole prefix and
// stopping where it writes an end-of-text token
// (each architecture's parts in the decoder: soft-caps, sandwich and post
// norms, windows by layer, head_dim, partial and scaled rotary).
func TestEachArchitectureWrites(t *testing.T) {
	prompt := []int{20, 21, 22, 20, 21}
	for _, name := range newArchitectures {
		dir := filepath.Join("..", "..", "open", "hf", "testdata", name)
		op := openDir(t, dir)
		want := string(tokenizer.Decode(tokenizer.IDs(op.Model.Config.Vocab), append(prompt, fullForwards(t, op, prompt, 8)...))) + "\n"
		for _, flags := range [][]string{nil, {"-path", "gorgonia"}, {"-no-cache"}} {
			out, notes, err := sampleNoted(t, append([]string{"-checkpoint", dir, "-tokens", "20 21 22 20 21", "-n", "8"}, flags...)...)
			if err != nil || out != want {
				t.Errorf("%s %v: wrote %q (%v), full forwards %q", name, flags, out, err, want)
			}
			if card := "model: " + op.Model.Config.Card() + "\n"; strings.Count(notes, card) != 1 {
				t.Errorf("%s %v: stderr %q, want the model card once: %q", name, flags, notes, card)
			}
		}
	}
}

// fullForwards is what generate writes greedily after prompt without the
// KV cache, each token from a forward of the whole prefix: n tokens, or
// those before the model's first end-of-text token (OLMo 2's, here).
func fullForwards(t *testing.T, op *open.Opened, prompt []int, n int) []int {
	t.Helper()
	st, err := generate.New(op.Model, 1, len(prompt)+n, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := generate.NewSampler(generate.Options{TopP: 1})
	ids, err := generate.StreamUntil(st, [][]int{prompt}, []int{n}, s, op.Model.Config.Vocab, op.EOS, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out := ids[0]; len(out) > 0 && slices.Contains(op.EOS, out[len(out)-1]) {
		return out[:len(out)-1] // the end is not printed
	}
	return ids[0]
}
