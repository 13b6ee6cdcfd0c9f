package open

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
)

// gpt2Vocab writes a tiny model of GPT-2's vocabulary (2 layers of 16) as a
// Hugging Face directory without tokenizer files.
func gpt2Vocab(t *testing.T) string {
	t.Helper()
	m, err := model.New(model.Config{Vocab: 50257, Context: 32, DModel: 16, Heads: 2, Layers: 2, MLP: true, DFF: 32,
		QKVBias: true, OutBias: true, TieEmbeddings: true}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "gpt2-tiny")
	if err := hf.SaveGPT2(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenPretrained: a Hugging Face directory and a nanoGPT ckpt.pt (the
// file, or the out_dir holding it) open with their source, their
// tokenizer (meta.pkl's characters; GPT-2's for a GPT-2 of its vocabulary
// without tokenizer files; ids otherwise) and the repeated-tokens task
// over it, each file read named on the notices; -vocab on a lab checkpoint
// is refused.
func TestOpenPretrained(t *testing.T) {
	nano, meta := filepath.Join("nanogpt", "testdata", "bias"), filepath.Join("nanogpt", "testdata", "meta.pkl")
	for _, c := range []struct {
		path, vocab, source, tokenizer, notice string
	}{
		{filepath.Join("hf", "testdata", "prefixed"), "", "Hugging Face GPT2LMHeadModel", "none (96 token ids)", "has no tokenizer files"},
		{gpt2Vocab(t), "", "Hugging Face GPT2LMHeadModel", "GPT-2 byte-level BPE (50257 tokens)", "using GPT-2's own tokenizer"},
		{filepath.Join(nano, "ckpt.pt"), meta, "nanoGPT", "characters (49 tokens)", "meta.pkl"},
		{nano, meta, "nanoGPT", "characters (49 tokens)", "meta.pkl"},
		{nano, "", "nanoGPT", "none (49 token ids)", "meta.pkl"},
	} {
		var notes bytes.Buffer
		op, err := Open(c.path, Options{Notices: &notes, Vocab: c.vocab})
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		task, ok := op.Task.(data.RepeatedTokens)
		if op.Source != c.source || !strings.HasPrefix(op.Tokenizer.Name(), c.tokenizer) || !ok || task.Tok != op.Tokenizer {
			t.Errorf("%s: source %q, tokenizer %q, task %s; want %q, %q and repeated tokens over the tokenizer",
				c.path, op.Source, op.Tokenizer.Name(), op.Task.Name(), c.source, c.tokenizer)
		}
		if task.SeqLen() > op.Model.Config.Context {
			t.Errorf("%s: examples of %d tokens, a context of %d", c.path, task.SeqLen(), op.Model.Config.Context)
		}
		if !strings.Contains(notes.String(), c.notice) {
			t.Errorf("%s: notices %q lack %q", c.path, notes.String(), c.notice)
		}
	}
	if _, err := Open(shippedCheckpoint(t), Options{Vocab: "meta.pkl"}); err == nil || !strings.Contains(err.Error(), "is not a nanoGPT ckpt.pt") {
		t.Errorf("-vocab on a lab checkpoint: %v", err)
	}
}

// shippedCheckpoint is the shipped checkpoint's path from this package.
func shippedCheckpoint(t *testing.T) string {
	t.Helper()
	path := filepath.Join("..", ShippedCheckpoint)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}
