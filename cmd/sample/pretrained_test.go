package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnscope/attnscope/generate"
	"github.com/attnscope/attnscope/internal/escape"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open"
	"github.com/attnscope/attnscope/open/opentest"
	"github.com/attnscope/attnscope/tokenizer"
)

// TestPretrainedWritesItsTokenizersText: a model trained elsewhere
// continues -prompt, encoded by its tokenizer, and prints the prompt and
// the decoded continuation that generate writes greedily for the same ids
// (its own KV-cache run); -samples rows each print whole; -eval is refused.
func TestPretrainedWritesItsTokenizersText(t *testing.T) {
	dir := opentest.GPT2Dir(t, model.Config{Context: 32, DModel: 16, Heads: 2, Layers: 2, DFF: 32})
	out, err := sample(t, "-checkpoint", dir, "-prompt", "Hello, world", "-n", "6")
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := tokenizer.GPT2().Encode("Hello, world")
	if err != nil {
		t.Fatal(err)
	}
	op := openDir(t, dir)
	if want := "Hello, world" + string(tokenizer.Decode(op.Tokenizer, greedy(t, op, prompt, 6, op.EOS))); out != want+"\n" {
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

// TestLlamaFamilyStopsAtEveryEnd: a Llama (grouped-query, untied) and a
// Mistral (one kv head, window 4) continue -tokens as generate does
// greedily, with and without the KV cache, and stop at the second of the
// two end-of-text ids config.json lists (so a sample stopping only at the
// tokenizer's EOS writes on).
func TestLlamaFamilyStopsAtEveryEnd(t *testing.T) {
	prompt := []int{1, 5, 6}
	for _, variant := range []string{"llama", "mistral"} {
		fixture := filepath.Join("..", "..", "open", "hf", "testdata", variant)
		free := greedy(t, openDir(t, fixture), prompt, 8, nil)
		end := free[2]
		if cut := slices.Index(free, end); slices.Contains(free[:cut], 2) {
			t.Fatalf("%s writes the tokenizer's EOS 2 before %d: %v", variant, end, free)
		}
		dir := withEnds(t, fixture, []int{2, end})
		want := string(tokenizer.Decode(tokenizer.IDs(96), append(prompt, free[:slices.Index(free, end)]...))) + "\n"
		for _, cache := range [][]string{nil, {"-no-cache"}} {
			out, err := sample(t, append([]string{"-checkpoint", dir, "-tokens", "1 5 6", "-n", "8"}, cache...)...)
			if err != nil || out != want {
				t.Errorf("%s %v: wrote %q (%v), want %q: greedy %v stopped at %d", variant, cache, out, err, want, free, end)
			}
		}
	}
}

// openDir opens a model directory, failing the test on an error.
func openDir(t *testing.T, dir string) *open.Opened {
	t.Helper()
	op, err := open.Open(dir, open.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// greedy is what generate writes greedily after prompt with the KV cache:
// n tokens, or up to the first of stops.
func greedy(t *testing.T, op *open.Opened, prompt []int, n int, stops []int) []int {
	t.Helper()
	st, err := generate.New(op.Model, 1, len(prompt)+n, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, _ := generate.NewSampler(generate.Options{TopP: 1})
	ids, err := generate.StreamUntil(st, [][]int{prompt}, []int{n}, s, op.Model.Config.Vocab, stops, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// withEnds copies the Hugging Face directory fixture with config.json's
// eos_token_id set to ends.
func withEnds(t *testing.T, fixture string, ends []int) string {
	t.Helper()
	dir := t.TempDir()
	files, err := os.ReadDir(fixture)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(fixture, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() == "config.json" {
			b = setJSON(t, b, "eos_token_id", ends)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// setJSON is the JSON object doc with key set to value.
func setJSON(t *testing.T, doc []byte, key string, value any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = value
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// bytesAndEOS is a tokenizer whose id i < 256 is the byte i, 256 the end
// of text and 257 another (Llama 3's <|eot_id|>).
type bytesAndEOS struct{}

func (bytesAndEOS) Encode(string) ([]int, error) { return nil, nil }
func (bytesAndEOS) Token(id int) []byte {
	if id >= 256 {
		return []byte("<eos>")
	}
	return []byte{byte(id)}
}
func (bytesAndEOS) Size() int    { return 258 }
func (bytesAndEOS) EOS() int     { return 256 }
func (bytesAndEOS) BOS() int     { return -1 }
func (bytesAndEOS) Name() string { return "bytes" }

// TestTextRowsHoldAndStop: a character split across tokens is written once
// whole, a control character escaped, and either end-of-text token ends the
// row unprinted.
func TestTextRowsHoldAndStop(t *testing.T) {
	for _, end := range []int{256, 257} {
		var buf bytes.Buffer
		rows := &textRows{w: &buf, tok: bytesAndEOS{}, ends: []int{256, 257}, n: 10, prompt: "p", rows: []textRow{{stream: tokenizer.NewStream(bytesAndEOS{})}}}
		if err := rows.start(); err != nil {
			t.Fatal(err)
		}
		var written []int
		var after []string
		for _, id := range []int{0xe4, 0xb8, 0x96, 0x1b, 'a', end} {
			written = append(written, id)
			if err := rows.emit(0, written); err != nil {
				t.Fatal(err)
			}
			after = append(after, buf.String())
		}
		want := []string{"p", "p", "p世", `p世\x1b`, `p世\x1ba`, "p世\\x1ba\n"}
		for i := range want {
			if after[i] != want[i] {
				t.Errorf("ending at %d: after token %d the output is %q, want %q", end, i, after[i], want[i])
			}
		}
	}
}

// TestBeginningOfTextIsNotEchoed: GPT-2 starts from <|endoftext|> and a
// Llama-family prompt from the BOS its Encode puts first; neither is
// printed as text before the continuation (Hugging Face's
// skip_special_tokens), while -raw writes the tokenizer's bytes, the
// token's name included.
func TestBeginningOfTextIsNotEchoed(t *testing.T) {
	dir := opentest.GPT2Dir(t, model.Config{Context: 32, DModel: 16, Heads: 2, Layers: 2, DFF: 32})
	op := openDir(t, dir)
	bos := op.Tokenizer.BOS()
	written := greedy(t, op, []int{bos}, 4, op.EOS)
	if slices.Contains(op.EOS, written[len(written)-1]) {
		written = written[:len(written)-1]
	}
	text := string(tokenizer.Decode(op.Tokenizer, written))
	for _, c := range []struct {
		raw  bool
		want string
	}{{false, escape.Text(text) + "\n"}, {true, "<|endoftext|>" + text + "\n"}} {
		args := []string{dir, "-n", "4"}
		if c.raw {
			args = append(args, "-raw")
		}
		if out, err := sample(t, args...); err != nil || out != c.want {
			t.Errorf("%q: %v\nwrote %q\nwant  %q", args, err, out, c.want)
		}
	}
}
