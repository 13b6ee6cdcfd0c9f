package tokenizer

import (
	"strings"
	"testing"
)

// withPreTokenizer is tok with its pre-tokenizer replaced by pre (and a
// cache of its own).
func withPreTokenizer(tok *bpeTokenizer, pre preTokenizer) *bpeTokenizer {
	return &bpeTokenizer{
		model: tok.model, added: tok.added, addedNormalized: tok.addedNormalized, normalize: tok.normalize,
		pretokenize: pre, stripSpaces: tok.stripSpaces, bos: tok.bos, eos: tok.eos, template: tok.template, name: tok.name,
	}
}

// mixedMegabyte is the test corpus repeated to 1 MB: code, prose in 26
// languages, CJK, emoji, combining marks, odd whitespace.
func mixedMegabyte(b *testing.B) string {
	corpus := llamaCorpus(b)
	return strings.Repeat(corpus, (1<<20)/len(corpus)+1)[:1<<20]
}

// BenchmarkEncodeMegabyte encodes 1 MB of mixed text with GPT-2's and
// Llama 3.1's tokenizers, their pre-tokenizer written by hand and run by
// regexp2 from the pattern (each tokenizer's piece cache warm after the
// first run, as a sampler's is).
func BenchmarkEncodeMegabyte(b *testing.B) {
	text := mixedMegabyte(b)
	var llama *bpeTokenizer
	for _, f := range readHFFixtures(b) {
		if f.Name == "llama3.1" {
			llama = hfTokenizer(b, f)
		}
	}
	gpt2 := gpt2()
	for _, c := range []struct {
		name string
		tok  *bpeTokenizer
	}{
		{"gpt2/hand", withPreTokenizer(gpt2, byPieceLen(gpt2PieceLen))},
		{"gpt2/regexp2", withPreTokenizer(gpt2, regexSplit(b, gpt2Pattern))},
		{"llama3/hand", withPreTokenizer(llama, byPieceLen(handSplits[llama3Pattern].pieceLen))},
		{"llama3/regexp2", withPreTokenizer(llama, regexSplit(b, llama3Pattern))},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := c.tok.Encode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadTokenizerJSON reads the tokenizer.json of Qwen 3 (151k
// tokens), Llama 3.1 (128k) and Gemma 3 (262k tokens, 515k merges) from
// memory.
func BenchmarkReadTokenizerJSON(b *testing.B) {
	for _, f := range readHFFixtures(b) {
		if f.Name != "qwen3" && f.Name != "llama3.1" && f.Name != "gemma3" {
			continue
		}
		raw := npmFile(b, f.Package, f.File, f.SHA256)
		b.Run(f.Name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, err := parseTokenizerJSON(raw, f.Name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
