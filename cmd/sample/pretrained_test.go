package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/tokenizer"
)

// gpt2Dir writes a tiny model of GPT-2's vocabulary as a Hugging Face
// directory without tokenizer files (GPT-2's own tokenizer then).
func gpt2Dir(t *testing.T) string {
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

// TestPretrainedWritesItsTokenizersText: a model trained elsewhere
// continues -prompt, encoded by its tokenizer, and prints the prompt and
// the decoded continuation that generate writes greedily for the same ids
// (its own KV-cache run); -samples rows each print whole; -eval is refused.
func TestPretrainedWritesItsTokenizersText(t *testing.T) {
	dir := gpt2Dir(t)
	out, err := sample(t, "-checkpoint", dir, "-prompt", "Hello, world", "-n", "6")
	if err != nil {
		t.Fatal(err)
	}
	op, err := open.Open(dir, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tokenizer.GPT2().Encode("Hello, world")
	if err != nil {
		t.Fatal(err)
	}
	st, err := generate.New(op.Model, 1, len(prompt)+6, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	greedy, _ := generate.NewSampler(generate.Options{TopP: 1})
	ids, err := generate.StreamUntil(st, [][]int{prompt}, []int{6}, greedy, op.Model.Config.Vocab, tokenizer.GPT2().EOS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello, world" + string(tokenizer.Decode(tokenizer.GPT2(), ids[0])); out != want+"\n" {
		t.Errorf("sample wrote %q, generate %q", out, want)
	}
	out, err = sample(t, "-checkpoint", dir, "-text", "Hi", "-n", "3", "-samples", "2", "-temperature", "1")
	if err != nil || strings.Count(out, "--- sample ") != 2 || strings.Count(out, "\nHi") != 2 {
		t.Errorf("two samples: %v\n%s", err, out)
	}
	if _, err := sample(t, "-checkpoint", dir, "-eval"); err == nil || !strings.Contains(err.Error(), "has none: give -prompt") {
		t.Errorf("-eval: %v", err)
	}
}

// bytesAndEOS is a tokenizer whose id i < 256 is the byte i and 256 the end
// of text.
type bytesAndEOS struct{}

func (bytesAndEOS) Encode(string) ([]int, error) { return nil, nil }
func (bytesAndEOS) Token(id int) []byte {
	if id == 256 {
		return []byte("<eos>")
	}
	return []byte{byte(id)}
}
func (bytesAndEOS) Size() int    { return 257 }
func (bytesAndEOS) EOS() int     { return 256 }
func (bytesAndEOS) BOS() int     { return -1 }
func (bytesAndEOS) Name() string { return "bytes" }

// TestTextRowsHoldAndStop: a character split across tokens is written once
// whole, a control character escaped, and the end-of-text token ends the
// row unprinted.
func TestTextRowsHoldAndStop(t *testing.T) {
	var buf bytes.Buffer
	rows := &textRows{w: &buf, tok: bytesAndEOS{}, n: 10, prompt: "p", rows: []textRow{{stream: tokenizer.NewStream(bytesAndEOS{})}}}
	if err := rows.start(); err != nil {
		t.Fatal(err)
	}
	var written []int
	var after []string
	for _, id := range []int{0xe4, 0xb8, 0x96, 0x1b, 'a', 256} {
		written = append(written, id)
		if err := rows.emit(0, written); err != nil {
			t.Fatal(err)
		}
		after = append(after, buf.String())
	}
	want := []string{"p", "p", "p世", `p世\x1b`, `p世\x1ba`, "p世\\x1ba\n"}
	for i := range want {
		if after[i] != want[i] {
			t.Errorf("after token %d the output is %q, want %q", i, after[i], want[i])
		}
	}
}
