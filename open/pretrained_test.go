package open

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/attnscope/attnscope/data"
	"github.com/attnscope/attnscope/model"
	"github.com/attnscope/attnscope/open/hf"
	"github.com/attnscope/attnscope/tokenizer"
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
	if err := hf.SaveGPT2(dir, m, nil); err != nil {
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
		if op.Origin != c.source || !strings.HasPrefix(op.Tokenizer.Name(), c.tokenizer) || !ok || task.Tok != op.Tokenizer {
			t.Errorf("%s: origin %q, tokenizer %q, task %s; want %q, %q and repeated tokens over the tokenizer",
				c.path, op.Origin, op.Tokenizer.Name(), op.Task.Name(), c.source, c.tokenizer)
		}
		if op.Run != nil {
			t.Errorf("%s: opened with a run config %+v; a model trained elsewhere has none", c.path, *op.Run)
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

// TestOpenLlamaFamily: Llama, Mistral and Qwen 2 directories open with
// their config.json's special tokens on the tokenizer (so the
// repeated-tokens task starts with BOS and sample stops at EOS) and every
// end-of-text id in Opened.EOS; a tokenizer.json the tokenizer package
// refuses (a SentencePiece-style Metaspace one) leaves a Llama on token
// ids with a notice naming the file and why, where GPT-2 is refused.
func TestOpenLlamaFamily(t *testing.T) {
	metaspace := `{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Metaspace"}}`
	for _, c := range []struct {
		variant, tokenizerJSON, source string
		bos, eos                       int
		ends                           []int
		notice                         string
	}{
		{"llama", "", "Hugging Face LlamaForCausalLM", 1, 2, []int{2}, "has no tokenizer files"},
		{"biased", "", "Hugging Face LlamaForCausalLM", 1, 2, []int{2, 3}, "has no tokenizer files"},
		{"mistral", "", "Hugging Face MistralForCausalLM", 1, 2, []int{2}, "has no tokenizer files"},
		{"qwen2", "", "Hugging Face Qwen2ForCausalLM", 4, 2, []int{2}, "has no tokenizer files"},
		{"llama", metaspace, "Hugging Face LlamaForCausalLM", 1, 2, []int{2}, `tokenizer.json: pre_tokenizer.replacement is ""`},
	} {
		dir := copyFixture(t, c.variant)
		if c.tokenizerJSON != "" {
			write(t, filepath.Join(dir, "tokenizer.json"), c.tokenizerJSON)
		}
		var notes bytes.Buffer
		op, err := Open(dir, Options{Notices: &notes})
		if err != nil {
			t.Errorf("%s: %v", c.variant, err)
			continue
		}
		task := op.Task.(data.RepeatedTokens)
		tokens := make([]int, task.SeqLen())
		rng := rand.New(rand.NewPCG(1, 2))
		task.Sample(rng, tokens, make([]int, len(tokens)), make([]float64, len(tokens)))
		if end := drawnEnd(task, rng, op.EOS); end >= 0 {
			t.Errorf("%s: the repeated-tokens task drew the end-of-text id %d (ends %v)", c.variant, end, op.EOS)
		}
		if op.Origin != c.source || op.Tokenizer.BOS() != c.bos || op.Tokenizer.EOS() != c.eos || !slices.Equal(op.EOS, c.ends) || tokens[0] != c.bos {
			t.Errorf("%s: source %q, BOS %d, EOS %d, ends %v, first token %d; want %q, %d, %d, %v, BOS",
				c.variant, op.Origin, op.Tokenizer.BOS(), op.Tokenizer.EOS(), op.EOS, tokens[0], c.source, c.bos, c.eos, c.ends)
		}
		if !strings.Contains(notes.String(), c.notice) {
			t.Errorf("%s: notices %q lack %q", c.variant, notes.String(), c.notice)
		}
	}
	gpt2 := copyFixture(t, "prefixed")
	write(t, filepath.Join(gpt2, "tokenizer.json"), metaspace)
	if _, err := Open(gpt2, Options{}); err == nil || !strings.Contains(err.Error(), `pre_tokenizer.replacement is ""`) {
		t.Errorf("GPT-2 with a tokenizer.json the reader refuses: %v", err)
	}
}

// drawnEnd is an id of ends that one of 20 examples of task holds, -1 if
// none does: with 96 ids and 50 drawn per example, an id the task does not
// skip turns up.
func drawnEnd(task data.RepeatedTokens, rng *rand.Rand, ends []int) int {
	tokens := make([]int, task.SeqLen())
	for range 20 {
		task.Sample(rng, tokens, make([]int, len(tokens)), make([]float64, len(tokens)))
		for _, id := range tokens {
			if slices.Contains(ends, id) {
				return id
			}
		}
	}
	return -1
}

// copyFixture copies the Hugging Face fixture directory variant into a
// temporary directory.
func copyFixture(t *testing.T, variant string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), variant)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("hf", "testdata", variant))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWithSpecials: config.json's ids go on a tokenizer that has them: BOS
// replaced, the tokenizer's EOS kept when eos_token_id lists it (else the
// first listed), every end-of-text id in ends, ids past the tokenizer
// dropped, and the tokenizer itself returned when nothing changes.
func TestWithSpecials(t *testing.T) {
	gpt2 := tokenizer.GPT2()
	for _, c := range []struct {
		name     string
		tok      tokenizer.Tokenizer
		specials hf.Specials
		bos, eos int
		ends     []int
	}{
		{"GPT-2's own", gpt2, hf.Specials{BOS: 50256, EOS: []int{50256}}, 50256, 50256, []int{50256}},
		{"the tokenizer's EOS listed", gpt2, hf.Specials{BOS: -1, EOS: []int{7, 50256}}, 50256, 50256, []int{50256, 7}},
		{"another EOS", gpt2, hf.Specials{BOS: 3, EOS: []int{7, 8}}, 3, 7, []int{50256, 7, 8}},
		{"ids", tokenizer.IDs(10), hf.Specials{BOS: 1, EOS: []int{2, 3}}, 1, 2, []int{2, 3}},
		{"past the tokenizer", tokenizer.IDs(10), hf.Specials{BOS: 10, EOS: []int{12}}, -1, -1, nil},
	} {
		tok, ends := withSpecials(c.tok, c.specials)
		if tok.BOS() != c.bos || tok.EOS() != c.eos || !slices.Equal(ends, c.ends) || tok.Name() != c.tok.Name() {
			t.Errorf("%s: BOS %d, EOS %d, ends %v, %q; want %d, %d, %v", c.name, tok.BOS(), tok.EOS(), ends, tok.Name(), c.bos, c.eos, c.ends)
		}
		if unchanged := c.bos == c.tok.BOS() && c.eos == c.tok.EOS(); unchanged != (tok == c.tok) {
			t.Errorf("%s: the tokenizer itself returned: %t, want %t", c.name, tok == c.tok, unchanged)
		}
		// tokenizer.Decode unwraps to the tokenizer's own decoder (a
		// SentencePiece one drops the text's first space).
		if w, ok := tok.(tokenizer.Wrapper); tok != c.tok && (!ok || w.Unwrap() != c.tok) {
			t.Errorf("%s: the wrapper does not unwrap to the tokenizer", c.name)
		}
	}
}

// TestPretrainedEnds: a model trained elsewhere ends its texts at the ids
// it is given (config.json's), else at its tokenizer's EOS (a nanoGPT GPT-2
// run's 50256), else at none.
func TestPretrainedEnds(t *testing.T) {
	m, err := model.New(model.Config{Vocab: 50304, Context: 8, DModel: 8, Heads: 1, Layers: 1}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tok        tokenizer.Tokenizer
		ends, want []int
	}{
		{tokenizer.GPT2(), []int{50256, 7}, []int{50256, 7}},
		{tokenizer.GPT2(), nil, []int{50256}},
		{tokenizer.IDs(50304), nil, nil},
	} {
		op, err := pretrained(m, c.tok, "ckpt.pt", "nanoGPT", 0, c.ends...)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(op.EOS, c.want) {
			t.Errorf("%s given ends %v: EOS %v, want %v", c.tok.Name(), c.ends, op.EOS, c.want)
		}
	}
}

// TestOpenRotaryContext: a model without a position table keeps its
// max_position_embeddings as its Context, long or short: the analyses size
// their runs by their own lengths (cmd/inspect's TestRotaryLongContext runs
// them at 131072).
func TestOpenRotaryContext(t *testing.T) {
	for _, positions := range []int{131072, 24} {
		dir := copyFixture(t, "mistral")
		config := filepath.Join(dir, "config.json")
		raw, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		write(t, config, strings.Replace(string(raw), `"max_position_embeddings": 64`, fmt.Sprintf(`"max_position_embeddings": %d`, positions), 1))
		op, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if op.Model.Config.Context != positions {
			t.Errorf("max_position_embeddings %d: Context %d", positions, op.Model.Config.Context)
		}
	}
}

// TestTokenNames: the names -tokens reads: a toy task's SEP; a character
// model's characters, as labelled (a space as ␣), exactly; a model trained
// elsewhere's beginning of text and every end-of-text id by their tokens'
// own spelling, never upper-cased.
func TestTokenNames(t *testing.T) {
	m, err := model.New(model.Config{Vocab: 50304, Context: 8, DModel: 8, Heads: 1, Layers: 1}, tensor.Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	chars, err := tokenizer.NewChars([]string{" ", "A", "a"})
	if err != nil {
		t.Fatal(err)
	}
	opened := func(tok tokenizer.Tokenizer, ends ...int) *Opened {
		op, err := pretrained(m, tok, "ckpt.pt", "nanoGPT", 0, ends...)
		if err != nil {
			t.Fatal(err)
		}
		return op
	}
	copyTask, err := data.New(data.TaskConfig{Name: "copy", Length: 4, Symbols: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		op         *Opened
		want       map[string]int
		characters bool
	}{
		{"copy", &Opened{Task: copyTask}, map[string]int{"SEP": 8}, false},
		{"characters", opened(chars), map[string]int{"␣": 0, "A": 1, "a": 2}, true},
		{"GPT-2 ending at two ids", opened(tokenizer.GPT2(), 50256, 198), map[string]int{"<|endoftext|>": 50256, "\n": 198}, false},
	} {
		got := TokenNames(c.op)
		if !maps.Equal(got.Names, c.want) || got.Characters != c.characters {
			t.Errorf("%s: names %v, characters %v; want %v, %v", c.name, got.Names, got.Characters, c.want, c.characters)
		}
	}
}

// TestOpenNoTextReadsNoTokenizer: a view with no text (inspect -graph)
// opens a Hugging Face directory without reading its tokenizer.json: one
// the reader refuses, which refuses the GPT-2 otherwise, is not read, and
// the tokens are ids.
func TestOpenNoTextReadsNoTokenizer(t *testing.T) {
	dir := copyFixture(t, "prefixed")
	write(t, filepath.Join(dir, "tokenizer.json"), `{"model": {"type": "BPE", "vocab": {}, "merges": []}, "pre_tokenizer": {"type": "Metaspace"}}`)
	var notes bytes.Buffer
	op, err := Open(dir, Options{NoText: true, Notices: &notes})
	if err != nil {
		t.Fatalf("with no text: %v", err)
	}
	if strings.Contains(notes.String(), "tokenizer.json") {
		t.Errorf("with no text, the notices name tokenizer.json: %q", notes.String())
	}
	ids := tokenizer.IDs(op.Model.Config.Vocab)
	if op.Tokenizer.Name() != ids.Name() || op.Tokenizer.Size() != ids.Size() || len(op.TokenizerFiles) != 0 {
		t.Errorf("with no text, the tokenizer is %s (%d tokens) from %v; want %s, from no file", op.Tokenizer.Name(), op.Tokenizer.Size(), op.TokenizerFiles, ids.Name())
	}
}
