package tokenizer

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestDecodeFromOpenedFiles: the readers of a file their caller opened
// build what the path readers build, and keep their bound, refused from
// the size before a byte is read.
func TestDecodeFromOpenedFiles(t *testing.T) {
	vocab, merges := []byte(vocabJSON(t, tinyVocab())), []byte(tinyMerges)
	section := func(b []byte) *io.SectionReader { return io.NewSectionReader(bytes.NewReader(b), 0, int64(len(b))) }
	tok, err := DecodeGPT2Files(section(vocab), section(merges), "vocab.json", "merges.txt")
	if err != nil {
		t.Fatal(err)
	}
	checkTinyEncodings(t, tok, false)

	huge := io.NewSectionReader(bytes.NewReader(nil), 0, maxFileBytes+1)
	want := "tokenizer.json is 67108865 bytes, more than the 67108864 bytes a tokenizer file may hold"
	if _, err := DecodeTokenizerJSON(huge, "tokenizer.json"); err == nil || err.Error() != want {
		t.Errorf("a tokenizer.json past the bound: %v, want %q", err, want)
	}
	if _, err := DecodeGPT2Files(section(vocab), huge, "vocab.json", "tokenizer.json"); err == nil || err.Error() != want {
		t.Errorf("a merges.txt past the bound: %v, want %q", err, want)
	}
	if _, err := DecodeTokenizerJSON(section([]byte(`{"model": {"type": "WordPiece"}}`)), "tokenizer.json"); err == nil || !strings.HasPrefix(err.Error(), "tokenizer.json: ") {
		t.Errorf("a WordPiece tokenizer.json: %v, want an error naming the file", err)
	}
}
