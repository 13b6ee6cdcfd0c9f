package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// gpt2Dir writes a small model of GPT-2's vocabulary (3 layers of 12 heads,
// so the views lay out more than 32 heads) as a Hugging Face directory
// without tokenizer files: it opens with GPT-2's own tokenizer.
func gpt2Dir(t *testing.T) string {
	t.Helper()
	m, err := model.New(model.Config{Vocab: 50257, Context: 128, DModel: 24, Heads: 12, Layers: 3, MLP: true, DFF: 48,
		QKVBias: true, OutBias: true, TieEmbeddings: true}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gpt2-small-vocab")
	if err := hf.SaveGPT2(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runNoted runs the command, failing the test on an error; what it reads is
// named on stderr, which it returns.
func runNoted(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(args, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v", args, err)
	}
	if !strings.Contains(stderr.String(), "reading ") {
		t.Errorf("run %q named no file read: %q", args, stderr.String())
	}
	return stdout.Bytes()
}

// TestPretrainedViews: a model trained elsewhere opens in every view. By
// default its roles pool over repeated random tokens (8 of them) and its 36
// heads show as a grid with layer 0's heatmaps; -text shows the text's
// tokens as labels ("␣" for spaces), scores the roles on it at every
// position; -json carries the tokens and labels; -circuits, -ablate and
// -html run; a nanoGPT character model reads -text through meta.pkl.
func TestPretrainedViews(t *testing.T) {
	dir := gpt2Dir(t)
	out := string(runNoted(t, "-checkpoint", dir, "-color", "never"))
	for _, want := range []string{"Hugging Face GPT2LMHeadModel, tokenizer GPT-2 byte-level BPE (50257 tokens)",
		"roles pooled over 8 examples of repeated-tokens", "layer   h0", "heatmaps of layer 0 only, of 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("default view lacks %q:\n%.1500s", want, out)
		}
	}
	out = string(runNoted(t, "-checkpoint", dir, "-text", "The cat sat on the mat.", "-layer", "1", "-head", "0", "-color", "never"))
	for _, want := range []string{"sequence (from -text;", "every one scored", "␣cat", "roles scored on the text given", "layer 1 head 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("-text view lacks %q:\n%.2500s", want, out)
		}
	}
	var doc struct {
		Tokens []int    `json:"tokens"`
		Labels []string `json:"labels"`
	}
	if err := json.Unmarshal(runNoted(t, "-checkpoint", dir, "-text", "Hello world", "-json"), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tokens) != 2 || doc.Tokens[0] != 15496 || doc.Labels[1] != "␣world" {
		t.Errorf("-json of \"Hello world\": tokens %v, labels %q; want GPT-2's [15496 995] and ␣world", doc.Tokens, doc.Labels)
	}
	out = string(runNoted(t, "-checkpoint", dir, "-circuits", "-ablate", "-samples", "2", "-layer", "0", "-head", "0", "-color", "never"))
	for _, want := range []string{"activation patching", "in-context learning", "logit lens", "Δloss"} {
		if !strings.Contains(out, want) {
			t.Errorf("-circuits -ablate lacks %q:\n%s", want, out)
		}
	}
	page := filepath.Join(t.TempDir(), "page.html")
	runNoted(t, "-checkpoint", dir, "-samples", "2", "-html", page)
	if info, err := os.Stat(page); err != nil || info.Size() == 0 {
		t.Errorf("-html wrote nothing: %v", err)
	}
	nano := filepath.Join("..", "..", "open", "nanogpt", "testdata")
	out = string(runNoted(t, "-checkpoint", filepath.Join(nano, "bias", "ckpt.pt"), "-vocab", filepath.Join(nano, "meta.pkl"), "-text", "the cat", "-summary", "-color", "never"))
	if !strings.Contains(out, "nanoGPT, tokenizer characters (49 tokens)") {
		t.Errorf("nanoGPT -text:\n%s", out)
	}
}
