package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gpt2Sources are the three ways to get GPT-2's tokenizer: the embedded
// copy, vocab.json + merges.txt, and a tokenizer.json written by
// testdata/gen_gpt2_ids.js from the same vocabulary and merges.
func gpt2Sources(t *testing.T) map[string]Tokenizer {
	t.Helper()
	dir := t.TempDir()
	vocab := writeFile(t, dir, "vocab.json", gunzip(gpt2VocabGz))
	merges := writeFile(t, dir, "merges.txt", gunzip(gpt2MergesGz))
	fromFiles, err := ReadGPT2Files(vocab, merges)
	if err != nil {
		t.Fatal(err)
	}
	tokJSON := writeFile(t, dir, "tokenizer.json", gunzip(readTestdata(t, "gpt2_tokenizer.json.gz")))
	fromJSON, err := ReadTokenizerJSON(tokJSON)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Tokenizer{"GPT2()": GPT2(), "vocab.json+merges.txt": fromFiles, "tokenizer.json": fromJSON}
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corpusIDs are the ids npm's gpt-3-encoder gives testdata/gpt2_corpus.txt.
func corpusIDs(t *testing.T) []int {
	t.Helper()
	fields := strings.Fields(string(gunzip(readTestdata(t, "gpt2_corpus.ids.gz"))))
	ids := make([]int, len(fields))
	for i, f := range fields {
		id, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("gpt2_corpus.ids.gz: id %d is %q", i, f)
		}
		ids[i] = id
	}
	return ids
}

// TestGPT2MatchesPublishedEncoder: every way to read GPT-2's tokenizer
// encodes the 108 KB corpus (code, prose in 26 languages, emoji, combining
// marks, RTL text, odd whitespace, contractions, control characters) to
// exactly the ids of GPT-2's published encoder (npm gpt-3-encoder), and
// decodes them back to the corpus byte for byte. Exact: no tolerance.
func TestGPT2MatchesPublishedEncoder(t *testing.T) {
	corpus := string(readTestdata(t, "gpt2_corpus.txt"))
	want := corpusIDs(t)
	if len(corpus) < 100<<10 {
		t.Fatalf("the corpus is %d bytes, want at least 100 KB", len(corpus))
	}
	for name, tok := range gpt2Sources(t) {
		got, err := tok.Encode(corpus)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if i := firstDifference(got, want); i >= 0 {
			t.Errorf("%s: %d ids, want %d; first difference at id %d: %s", name, len(got), len(want), i, around(tok, got, want, i))
		}
		if d := Decode(tok, want); string(d) != corpus {
			t.Errorf("%s: the published ids decode to %d bytes that are not the corpus", name, len(d))
		}
		if tok.Size() != 50257 || tok.EOS() != 50256 || tok.BOS() != 50256 || string(tok.Token(50256)) != "<|endoftext|>" {
			t.Errorf("%s: size %d, EOS %d, BOS %d, token 50256 %q; want 50257 tokens and <|endoftext|> = 50256",
				name, tok.Size(), tok.EOS(), tok.BOS(), tok.Token(50256))
		}
		if tok.Name() != "GPT-2 byte-level BPE (50257 tokens)" {
			t.Errorf("%s: name %q", name, tok.Name())
		}
	}
}

// firstDifference is the first index where got and want differ, -1 if none.
func firstDifference(got, want []int) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	return -1
}

// around shows the tokens of got and want near index i.
func around(tok Tokenizer, got, want []int, i int) string {
	show := func(ids []int) string {
		var parts []string
		for _, id := range ids[max(0, i-3):min(len(ids), i+4)] {
			parts = append(parts, fmt.Sprintf("%d%q", id, tok.Token(id)))
		}
		return strings.Join(parts, " ")
	}
	return "got " + show(got) + ", want " + show(want)
}

// TestGPT2Split: the hand-written pre-tokenizer splits short texts exactly
// as GPT-2's regular expression does in Python's regex module
// (testdata/gen_gpt2_split.py), whitespace runs, contractions, U+0085 and
// U+FEFF (where JavaScript's \s differs) included.
func TestGPT2Split(t *testing.T) {
	var cases []struct {
		Text   string
		Pieces []string
	}
	if err := json.Unmarshal(readTestdata(t, "gpt2_split.json"), &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if got := gpt2Pieces(c.Text); !slices.Equal(got, c.Pieces) {
			t.Errorf("%q splits into %q, want %q", c.Text, got, c.Pieces)
		}
	}
}

// gpt2Pieces is the pre-tokenizer's pieces of text.
func gpt2Pieces(text string) []string {
	pieces := []string{}
	for len(text) > 0 {
		n := gpt2PieceLen(text)
		pieces = append(pieces, text[:n])
		text = text[n:]
	}
	return pieces
}

// TestGPT2EncodesAnyBytes: text that is not UTF-8, control characters and
// a long run of one character encode and decode back exactly, and a
// special token's name in the text is text.
func TestGPT2EncodesAnyBytes(t *testing.T) {
	tok := GPT2()
	for _, text := range []string{
		"a\xffb \xc3 \xe4\xb8 end\xf0\x9f\x98",
		"\x00\x01\x7f\x1b[0m",
		strings.Repeat("a", 50000),
		strings.Repeat(" ", 5000) + "x",
		"<|endoftext|>",
	} {
		ids, err := tok.Encode(text)
		if err != nil {
			t.Fatalf("%.40q: %v", text, err)
		}
		if d := Decode(tok, ids); !bytes.Equal(d, []byte(text)) {
			t.Errorf("%.40q decodes to %.40q", text, d)
		}
		for _, id := range ids {
			if id == tok.EOS() {
				t.Errorf("%.40q encodes to the end-of-text id", text)
			}
		}
	}
}

// TestTokenIsACopy: changing the bytes Token returns leaves the tokenizer
// as it was, and an id outside the vocabulary has no bytes.
func TestTokenIsACopy(t *testing.T) {
	tok := GPT2()
	b := tok.Token(0)
	b[0] = 'X'
	if got := string(tok.Token(0)); got != "!" {
		t.Errorf("token 0 is %q after a caller changed its copy, want \"!\"", got)
	}
	for _, id := range []int{-1, tok.Size()} {
		if b := tok.Token(id); b != nil {
			t.Errorf("Token(%d) = %q, want nil", id, b)
		}
	}
}
